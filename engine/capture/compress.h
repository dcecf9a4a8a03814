// gzip for capture files (zlib): a capture saved under a name ending in ".gz" is gzip-compressed;
// a load recognises gzip by its magic bytes, whatever the name. A gpt of 32 layers compared in two
// orders is about 50 MB of JSON and 6 MB gzipped.
// Contract: gzip() compresses `text` into one gzip member; gunzip() inflates every member of
// `data`, refusing (std::runtime_error naming the limit) output beyond `max_bytes`, and throws
// std::runtime_error saying what is wrong for data that is not gzip or is cut off. Both throw
// std::runtime_error when the build has no zlib (compressed() still answers).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace tv::capture_detail {

bool compressed(std::string_view data);          // starts with gzip's magic bytes
bool compression_requested(std::string_view path);  // the name ends in ".gz"
std::string gzip(std::string_view text);
std::string gunzip(std::string_view data, size_t max_bytes);

}  // namespace tv::capture_detail
