#include "capture/compress.h"

#include <stdexcept>

#ifdef TV_HAVE_ZLIB
#include <zlib.h>
#endif

namespace tv::capture_detail {

bool compressed(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f && static_cast<unsigned char>(data[1]) == 0x8b;
}

bool compression_requested(std::string_view path) {
  return path.size() >= 3 && path.substr(path.size() - 3) == ".gz";
}

#ifdef TV_HAVE_ZLIB

namespace {
constexpr int kGzipWindow = 15 + 16;  // zlib's window bits plus 16: a gzip header and trailer
// Level 1: a capture's repeated trace lines compress almost as well as at level 6, several times faster.
constexpr int kLevel = 1;
}  // namespace

std::string gzip(std::string_view text) {
  z_stream z{};
  if (deflateInit2(&z, kLevel, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: zlib could not start");
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(text.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int r = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  if (r != Z_STREAM_END) throw std::runtime_error("gzip: compression failed");
  out.resize(z.total_out);
  return out;
}

std::string gunzip(std::string_view data, size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, kGzipWindow) != Z_OK) throw std::runtime_error("gunzip: zlib could not start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    int r = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      throw std::runtime_error("the gzip data inflates beyond " + std::to_string(max_bytes) + " bytes (the limit)");
    }
    if (r == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // a further gzip member follows
      continue;
    }
    if (r == Z_BUF_ERROR && z.avail_in == 0) {
      inflateEnd(&z);
      throw std::runtime_error("the gzip data is cut off (it ends before its end marker)");
    }
    if (r != Z_OK && r != Z_BUF_ERROR) {
      std::string why = z.msg ? z.msg : "bad data";
      inflateEnd(&z);
      throw std::runtime_error("the gzip data is damaged: " + why);
    }
  }
  inflateEnd(&z);
  return out;
}

#else

std::string gzip(std::string_view) {
  throw std::runtime_error("this build has no zlib, so it cannot write gzip: save as .tvz.json (without .gz)");
}

std::string gunzip(std::string_view, size_t) {
  throw std::runtime_error("the file is gzip-compressed and this build has no zlib: gunzip it first");
}

#endif

}  // namespace tv::capture_detail
