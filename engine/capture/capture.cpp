#include "capture/capture.h"

#include "capture/atomic_file.h"
#include "capture/compress.h"
#include "capture/decode.h"
#include "capture/encode.h"
#include "capture/json_text.h"

namespace tv {
namespace {

using capture_detail::Json;

std::string describe(const std::string& file, const std::string& path, const std::string& message) {
  std::string out = file.empty() ? std::string("<capture>") : file;
  out += ": ";
  if (!path.empty()) out += path + ": ";
  return out + message;
}

// Parser messages quote the bytes they stopped at; keep them printable.
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  return out;
}

Json parse_document(std::string_view text, const std::string& file) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw CaptureError(file, "", "the file is empty (expected a thunder-viz capture, a JSON object)");
  try {
    return capture_detail::parse_json_strict<Json>(text);
  } catch (const capture_detail::JsonTextError& e) {
    throw CaptureError(file, e.path(), e.what());
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    throw CaptureError(file, "", "not valid JSON (truncated or damaged?): " + printable(what));
  }
}

Capture decode_document(Json document, const std::string& source_name) {
  try {
    return capture_detail::decode_capture(std::move(document), source_name);
  } catch (const CaptureError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw CaptureError(source_name, "", "out of memory while reading the capture");
  } catch (const std::exception& e) {
    // Every check is explicit; this is a last line of defence, never a crash.
    throw CaptureError(source_name, "", std::string("unexpected content: ") + printable(e.what()));
  }
}

}  // namespace

CaptureError::CaptureError(std::string file, std::string json_path, std::string message)
    : CaptureError(std::move(file), std::move(json_path), std::move(message), 0, 0) {}

CaptureError::CaptureError(std::string file, std::string json_path, std::string message, int trace_line,
                           int trace_column)
    : std::runtime_error(describe(file, json_path, message)),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      message_(std::move(message)),
      trace_line_(trace_line),
      trace_column_(trace_column) {}

std::string capture_to_json(const Capture& c) {
  return capture_detail::encode_capture(c).dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

Capture capture_from_json(std::string text, const std::string& source_name) {
  auto document = parse_document(text, source_name);
  std::string().swap(text);  // the document holds it all now: a large capture's peak is one copy
  return decode_document(std::move(document), source_name);
}

void save_capture(const Capture& c, const std::string& path) {
  std::string text = capture_to_json(c);
  if (capture_detail::compression_requested(path)) {
    try {
      text = capture_detail::gzip(text);
    } catch (const std::runtime_error& e) {
      throw CaptureError(path, "", e.what());
    }
  }
  capture_detail::write_file_atomically(path, text);
}

Capture load_capture(const std::string& path) {
  Json document;
  {
    auto file = capture_detail::WholeFile::open(path);
    std::string_view text = file.bytes();
    std::string inflated;
    if (capture_detail::compressed(text)) {
      try {
        inflated = capture_detail::gunzip(text, capture_detail::kMaxInputBytes);
      } catch (const std::runtime_error& e) {
        throw CaptureError(path, "", e.what());
      }
      text = inflated;
    }
    document = parse_document(text, path);
  }  // the file's bytes go before the document is decoded: a large capture's peak is one copy
  return decode_document(std::move(document), path);
}

void parse_stored_traces(const Capture& c) {
  for (const auto& p : c.pipelines)
    for (auto kind : kTraceKinds)
      for (const auto& stage : p.stages.of(kind))
        if (stage.trace) stage.trace.shared();
}

}  // namespace tv
