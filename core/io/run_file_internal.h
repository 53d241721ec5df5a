// Opening a run file with its schema checks, and the shadow copy that makes run.h5 survive a
// crash at any moment; shared by the reader, the writer and `inspect`. Internal to core/io.
//
// Why a shadow: HDF5 1.10 has no atomic commit. A flush writes many metadata blocks in place,
// and a process killed during a write or its flush can leave the file unreadable (in a test
// that kills a writer writing snapshots back to back, a few kills in a hundred did). So while a run
// writes, the writer applies every change to DIR/run.h5 and then to DIR/run.h5.shadow, each change
// ending with a flush. At any moment at most one of the two files is being changed, the other is
// complete. Readers open run.h5 and fall back to the shadow when run.h5 is damaged; open_append
// repairs run.h5 from the shadow; a clean close removes the shadow.
#pragma once

#include <H5Cpp.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/io/run_file.h"
#include "core/util/errors.h"

namespace relpos {

// HDF5 could not open or walk the file (truncated, corrupt, torn by a crash, not HDF5).
class DamagedRunFile : public SchemaError {
 public:
  using SchemaError::SchemaError;
};

struct OpenedRunFile {
  H5::H5File file;
  int64_t version = 0;
  std::string path;  // the file actually opened (the shadow when run.h5 was damaged)
};

// "DIR/run.h5" -> "DIR/run.h5.shadow".
std::string shadow_path(const std::string& path);
// "DIR/run.h5.writing": present while run.h5 itself is being changed (the shadow is then the
// intact copy). HDF5 cannot always tell a torn file: reading a variable-length string whose heap
// was half written can loop inside the library, so the marker, not a check, says which to read.
std::string writing_marker_path(const std::string& path);
void set_writing_marker(const std::string& path);
void clear_writing_marker(const std::string& path);
bool has_writing_marker(const std::string& path);

// Opens `path` (read-only, or read-write for appending) and checks its schema version. Throws
// SchemaError naming the file when it is missing, has no integer schema_version or a version
// newer than schema::kSchemaVersion (naming both versions), and DamagedRunFile when HDF5
// cannot open it.
OpenedRunFile open_run_file(const std::string& path, bool writable);

// open_run_file, then opens every group, dataset and attribute once (metadata only), so that a
// file torn by a crash is found at once (DamagedRunFile) rather than at some later read.
OpenedRunFile open_intact_run_file(const std::string& path, bool writable);

// open_intact_run_file(path), or, when `path` is damaged and its shadow is intact, the shadow;
// otherwise rethrows the error about `path`.
OpenedRunFile open_run_file_or_shadow(const std::string& path);

// One HDF5 run file, without a shadow (run_file_writer.cpp). close() releases every HDF5 object
// of the file (its datasets before the file itself), so that nothing is left for the library
// to close at exit.
class SingleRunFileWriter : public RunFileWriter {
 public:
  // Closes a file that a failed write (a full disk) left torn while its other copy, run.h5 or
  // its shadow, is intact. Closing an HDF5 file writes its cached metadata, which fails again on
  // a full disk and leaves the file, and memory of the library, unreleasable: HDF5 then prints
  // "infinite loop closing library" at exit. So the close writes into memory instead (the file
  // descriptor is pointed at a memfd) and the torn file on disk is left as the failed write
  // left it. Readers and --resume take the other copy (the writing marker or a missing shadow
  // says which).
  virtual void close_torn() = 0;
  // Whether a write failed inside HDF5 (not a refused argument): the file on disk may be torn.
  virtual bool torn() const = 0;
};

// A new file with the root attributes as given, or a file opened read-write.
std::unique_ptr<SingleRunFileWriter> create_single_run_file(const std::string& path,
                                                            const RunAttributes& attrs);
std::unique_ptr<SingleRunFileWriter> single_run_file_writer(const std::string& path,
                                                            H5::H5File file);

// Replaces `to` with a copy of `from` through a temporary file and a rename.
void copy_file_atomically(const std::string& from, const std::string& to);

}  // namespace relpos
