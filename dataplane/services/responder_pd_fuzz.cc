// Fuzz target: the iwarp_client's parser of the responder's MPA Reply private
// data (DecodeResponderPd), which a peer controls.
//
// Traps on: a decoded value that does not survive Encode -> Decode, or an
// accepted input shorter than the layout.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "dataplane/services/iwarp_services.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using iwarp::dataplane::ResponderPrivateData;
  ResponderPrivateData pd;
  if (!iwarp::dataplane::DecodeResponderPd(iwarp::ByteSpan(data, size), &pd)) return 0;
  if (size < iwarp::dataplane::kResponderPdSize) std::abort();
  uint8_t buf[iwarp::dataplane::kResponderPdSize];
  if (!iwarp::dataplane::EncodeResponderPd(pd, iwarp::MutableByteSpan(buf))) std::abort();
  ResponderPrivateData back;
  if (!iwarp::dataplane::DecodeResponderPd(iwarp::ByteSpan(buf), &back)) std::abort();
  if (back.stag != pd.stag || back.to != pd.to || back.length != pd.length ||
      back.recv_buffer_bytes != pd.recv_buffer_bytes || back.recv_buffers != pd.recv_buffers) {
    std::abort();
  }
  return 0;
}
