/* The C interface of relpos's SentencePiece shim (libspm_shim.so).
 *
 * Why a shim: Debian's libsentencepiece carries its own copy of protobuf-lite, which crashes at
 * load time in a program that also links LibTorch's libprotobuf. relpos therefore never links
 * SentencePiece: this small shared library does, and core/data/tokenizer_sentencepiece.cpp opens
 * it at run time with dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND), so the shim and
 * SentencePiece resolve their symbols among themselves first.
 *
 * Conventions: functions returning int give 0 on success; on failure they set *error to a
 * message that the caller frees with relpos_spm_free. Every buffer the shim returns is freed with
 * relpos_spm_free. No C++ exception crosses this interface. */
#ifndef RELPOS_SPM_SHIM_H
#define RELPOS_SPM_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RELPOS_SPM_ABI 1
int relpos_spm_abi(void);

/* Trains a model on `n` sentences with SentencePiece trainer options given as key/value pairs
 * (the names of spm_train's flags). Returns the serialized model in *model. */
int relpos_spm_train(const char* const* sentences, const size_t* lengths, int64_t n,
                     const char* const* keys, const char* const* values, int64_t n_options,
                     char** model, size_t* model_size, char** error);

/* Loads a serialized model; returns a handle (NULL on failure). */
void* relpos_spm_load(const char* model, size_t model_size, char** error);
void relpos_spm_unload(void* handle);
int32_t relpos_spm_vocab_size(void* handle);
/* The piece of `id` (a copy in *piece). */
int relpos_spm_id_to_piece(void* handle, int32_t id, char** piece, size_t* size);

/* Encodes text; *ids, *begins, *ends get n entries: the id of each piece and the byte span
 * [begin, end) of the input it covers (empty for pieces with no text of their own: the dummy
 * prefix, and all but the last byte of a character spelled with byte-fallback pieces). */
int relpos_spm_encode(void* handle, const char* text, size_t size, int64_t* n, int32_t** ids,
                      uint32_t** begins, uint32_t** ends, char** error);
int relpos_spm_decode(void* handle, const int32_t* ids, int64_t n, char** text, size_t* size,
                      char** error);

void relpos_spm_free(void* p);

#ifdef __cplusplus
}
#endif

#endif
