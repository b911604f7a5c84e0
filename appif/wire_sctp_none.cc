// WireEngine without usrsctp (the build found no libusrsctp): the engine
// serves TCP only, and WireEngine::Create refuses an SCTP port.
#include "absl/status/status.h"
#include "appif/wire_engine.h"

namespace iwarp::appif {

struct WireEngine::SctpState {};

void WireEngine::SctpStateDeleter::operator()(SctpState* s) const { delete s; }

absl::Status WireEngine::CreateSctp() {
  return absl::UnimplementedError("iwarpd was built without usrsctp: no RDMA over SCTP");
}
void WireEngine::HandleSctpCommand(const WireCommand&) {}
void WireEngine::ReleaseSctp(WireQpContext*) {}
bool WireEngine::DropSctpRequest(uint32_t) { return false; }
bool WireEngine::UnlistenSctp(uint32_t) { return false; }
void WireEngine::SctpStats(WireEngineStats*) const {}
uint32_t WireEngine::PollSctp() { return 0; }
void WireEngine::AdoptSctp(std::unique_ptr<sctp::SctpAssociation>, uint32_t) {}

}  // namespace iwarp::appif
