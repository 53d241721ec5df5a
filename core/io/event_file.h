// TensorBoard event files (docs/training.md, "Live curves"), written from the two specifications
// they follow, without TensorFlow:
//
//   TFRecord   a file is a sequence of records; a record is the data's length (uint64, little
//              endian), the masked CRC-32C of those 8 bytes (uint32 LE), the data, and the
//              masked CRC-32C of the data (uint32 LE). masked(c) = ((c >> 15) | (c << 17)) +
//              0xa282ead8, mod 2^32.
//   protobuf   each record's data is a serialized tensorboard.Event (event.proto, summary.proto):
//                Event    wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
//                         summary = 5 (Summary), session_log = 7 (SessionLog)
//                Summary  value = 1 (repeated Summary.Value)
//                Value    tag = 1 (string), simple_value = 2 (float), image = 4 (Summary.Image)
//                Image    height = 1, width = 2, colorspace = 3 (int32), encoded_image_string = 4
//                SessionLog  status = 1 (enum; START = 1)
//              The first event of a file carries file_version "brain.Event:2".
//
// TensorBoard reads every file whose name contains "tfevents", in name order, per folder: a
// folder is one run in its list. tests/reference/read_tfevents.py reads these files from the same
// specifications, with code of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace relpos {

// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF).
uint32_t crc32c(const void* data, size_t size);
// The masked form a TFRecord stores.
uint32_t masked_crc32c(const void* data, size_t size);

// One TFRecord frame around `data`.
std::string tfrecord(const std::string& data);

// A PNG for an image summary; colorspace 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA.
struct EventImage {
  int32_t height = 0;
  int32_t width = 0;
  int32_t colorspace = 3;
  std::string png;
};

// Serialized Event messages. Seconds since the Unix epoch in `wall_time`.
std::string file_version_event(double wall_time);
// SessionLog START at `step`: TensorBoard drops what it read earlier of the folder at steps >=
// `step` when it meets a second one (a restarted job's events past its checkpoint).
std::string session_start_event(double wall_time, int64_t step);
std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, float>>& values);
std::string image_event(double wall_time, int64_t step, const std::string& tag,
                        const EventImage& image);

// Seconds since the Unix epoch, now.
double unix_time_now();

// The event files directly in `dir` (names containing "tfevents"), sorted by name as TensorBoard
// reads them; empty when `dir` does not exist.
std::vector<std::string> event_files(const std::string& dir);

// A file of events in `dir`, named events.out.tfevents.<seconds>.<host>.<pid>.<suffix>. Its
// <seconds> is now's, or one past the newest event file already in `dir` when that is not
// earlier, so that TensorBoard reads the files of a resumed run in the order they were written.
class EventFileWriter {
 public:
  // Creates `dir` when missing, then the file, and writes the file_version event. Throws
  // RunError naming the file when it cannot be created.
  EventFileWriter(const std::string& dir, const std::string& suffix);
  // Frames `event`, appends it and flushes, so that the file is whole after every record.
  // Throws RunError naming the file when the write fails.
  void write(const std::string& event);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

// The <seconds> field of an event file's name (0 when it has none).
int64_t event_file_seconds(const std::string& path);

// The PNG's size from its header, as an EventImage (colorspace from the PNG's colour type).
// Throws DataError naming `what` when `png` is not a PNG.
EventImage png_image(std::string png, const std::string& what);

}  // namespace relpos
