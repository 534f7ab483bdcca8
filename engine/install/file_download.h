#pragma once
#include <atomic>
#include <functional>
#include <string>

#include "install/hub_client.h"
#include "install/install_events.h"
#include "install/range_fetch.h"

namespace deltafin {

// Downloads one hub file to `dest`: parallel ranged parts into `dest.partial`,
// durable part state in `dest.partial.json` (a restarted download resumes),
// the hash checked against the listing (a mismatch throws the bytes away and
// fetches that file again), then an atomic rename. `dest` never holds a
// partial or unverified file. `progress` counts bytes (resumed ones included).
// `on_state` may run on part threads, but never two calls at once.
void download_file(const HubClient& hub, const std::string& repo, const std::string& revision, const HubFile& file,
                   const std::string& dest, const FetchTuning& tuning, std::atomic<uint64_t>& progress,
                   const std::function<void(FileState, const std::string&)>& on_state, const std::atomic<bool>* cancel);

// Bytes of `dest` already downloaded (partial state), for planning and progress.
uint64_t partial_bytes(const std::string& dest, const HubFile& file);

}  // namespace deltafin
