// deltafin_local_hub MODEL_DIR [BYTES_PER_SECOND]: serves MODEL_DIR as the pinned Kimi K3 (and the
// fixtures as DSpark and Qwen) on 127.0.0.1 until stdin closes. Prints the hub's URL first.
// Used by screenshots.sh to show real installs without the internet.
#include <cstdlib>
#include <iostream>
#include <string>

#include "install/pinned_repos.h"
#include "install/test_hub.h"
#include "support/test_support.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: deltafin_local_hub MODEL_DIR [BYTES_PER_SECOND]\n";
    return 2;
  }
  deltafin::test::TestHub hub;
  const std::string fixtures = deltafin::test::fixtures_dir();
  for (const deltafin::PinnedRepo& p : deltafin::pinned_repos()) {
    if (p.role == deltafin::RepoRole::K3) hub.add_repo(p.repo, p.revision, argv[1]);
    if (p.role == deltafin::RepoRole::DSpark) hub.add_repo(p.repo, p.revision, fixtures + "/dspark-tiny");
    if (p.role == deltafin::RepoRole::Qwen) hub.add_repo(p.repo, p.revision, fixtures + "/qwen3-tiny");
  }
  if (argc > 2) hub.set_bytes_per_second(std::strtoull(argv[2], nullptr, 10));
  std::cout << hub.url() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;
}
