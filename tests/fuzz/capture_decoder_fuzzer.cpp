// libFuzzer harness: the capture decoder, strictly. Any document may be refused, with a
// CaptureError only (no other exception, crash, leak or hang). Whatever loads must save to a
// document that loads, and that document must save identically (load -> save -> load -> save is a
// fixed point): a file the tool writes always loads back. Every stored trace is read (a load parses
// them when first read), so a text that does not parse is a refusal like any other.
#include <cstddef>
#include <cstdint>
#include <string>

#include "capture/capture.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  tv::Capture loaded;
  try {
    loaded = tv::capture_from_json(input, "fuzz.tvz.json");
    tv::parse_stored_traces(loaded);
  } catch (const tv::CaptureError&) {
    return 0;
  }
  const std::string saved = tv::capture_to_json(loaded);
  tv::Capture back;
  try {
    back = tv::capture_from_json(saved, "saved.tvz.json");
    tv::parse_stored_traces(back);
  } catch (const tv::CaptureError& e) {
    tv::fuzz::violation("what loads saves to a document that loads", input, saved, e.what());
  }
  const std::string resaved = tv::capture_to_json(back);
  if (resaved != saved)
    tv::fuzz::violation("the saved document saves identically once loaded", saved, resaved, "the second save differs");
  return 0;
}
