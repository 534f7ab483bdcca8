#pragma once
// Client-disconnect detection. cpp-httplib 0.11 does not hand the connection's socket to route
// handlers, so the handler finds it by the TCP 4-tuple (our port, the peer's address and port)
// among this process's descriptors, then peeks at it: a socket whose peer closed reads EOF.
#include <string>

namespace deltafin::serve {

// The descriptor of the accepted connection from peer_addr:peer_port to local_port; -1 if none.
int find_connection_socket(const std::string& peer_addr, int peer_port, int local_port);

// True when the peer has closed the connection (or it failed). Never blocks, never consumes data.
bool peer_gone(int fd);

}  // namespace deltafin::serve
