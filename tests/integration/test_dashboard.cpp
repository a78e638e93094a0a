// The live dashboard (issue 12) in a real browser: headless Chromium loads / from a dispatcher
// with two workers and two connected sessions (one of which hit an error), runs the page's
// script against /api/status, and the rendered DOM must show both workers, both sessions, the
// user and the error. A screenshot is left in the build folder (dashboard.png).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "daemons.h"
#include "http_client.h"
#include "instr_builder.h"
#include "raw_client.h"
#include "test_text.h"

using namespace gt;
using namespace gt::testing;

namespace {

std::string chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

// The browser's flags: headless, its own throwaway profile, no sandbox (tests run as root in
// CI), and enough virtual time for the page's first polls of /api/status.
std::string browser(const std::string& profile) {
  return chromium() + " --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars"
                      " --user-data-dir=" + profile + " --virtual-time-budget=4000";
}

}  // namespace

TEST_CASE("the dashboard renders workers, sessions, users and errors in headless Chromium",
          "[monitoring][dashboard]") {
  if (chromium().empty())
    FAIL("no chromium: scripts/deps.sh installs the Debian package `chromium` this test needs");
  const std::string dir = temp_dir(), port_file = dir + "/http.port";
  Daemons d(DaemonOptions{2, {"--http-port", "0", "--http-port-file", port_file}, {}, {}});
  d.wait_for_workers(2);
  const int port = read_port_file(port_file);

  RawClient a(d.address()), b(d.address());
  const v1::ServerMessage wa = a.hello(), wb = b.hello();
  REQUIRE(wa.has_welcome());
  REQUIRE(wb.has_welcome());
  a.send(batch_of({make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{1 << 18}, DType::kFloat32))}));
  REQUIRE(a.request(v1::Request::SYNC).errors_size() == 0);
  b.send(batch_of({make_instr(OpId::k_ones, 1, {}, make_shape_dtype(Shape{3}, DType::kFloat32)),
                   make_instr(OpId::k_ones, 2, {}, make_shape_dtype(Shape{4}, DType::kFloat32)),
                   make_instr(OpId::k_add, 3, {1, 2})}));
  REQUIRE(b.request(v1::Request::SYNC).errors_size() == 1);

  // The page itself needs no token and holds no data.
  const HttpReply page = http_get(port, "/");
  REQUIRE(page.code == 200);
  CHECK(page.headers.find("text/html") != std::string::npos);
  CHECK(page.body.find("http://") == std::string::npos);   // nothing fetched from elsewhere
  CHECK(page.body.find("https://") == std::string::npos);

  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
  const std::string dom = shell(browser(dir + "/profile") + " --dump-dom " + url + " 2>/dev/null").second;
  INFO(dom.substr(0, 4000));
  // The rendered rows (the script writes them; the page source has none), not the script text.
  const size_t body = dom.find("<main>");
  REQUIRE(body != std::string::npos);
  const std::string rendered = dom.substr(body, dom.find("<script>", body) - body);
  CHECK(rendered.find("data-worker-id=\"0\"") != std::string::npos);
  CHECK(rendered.find("data-worker-id=\"1\"") != std::string::npos);
  CHECK(rendered.find("data-session-id=\"" + std::to_string(wa.welcome().session_id()) + "\"") !=
        std::string::npos);
  CHECK(rendered.find("data-session-id=\"" + std::to_string(wb.welcome().session_id()) + "\"") !=
        std::string::npos);
  CHECK(rendered.find("raw-test-client") != std::string::npos);  // the program column
  CHECK(rendered.find("1.0 MiB") != std::string::npos);          // what session a holds
  CHECK(rendered.find("class=\"error\"") != std::string::npos);  // b's failed add
  CHECK(rendered.find("CPU") != std::string::npos);              // the workers' device
  CHECK(dom.find("data-loaded=\"1\"") != std::string::npos);

  // The screenshot (for the README and for people reading a CI run).
  const std::string png = std::string(GT_TEST_BIN_DIR) + "/../dashboard.png";
  std::remove(png.c_str());
  shell(browser(dir + "/profile") + " --window-size=1400,640 --screenshot=" + png + " " + url +
      " 2>/dev/null");
  FILE* f = std::fopen(png.c_str(), "rb");
  REQUIRE(f != nullptr);
  unsigned char magic[8] = {};
  CHECK(std::fread(magic, 1, 8, f) == 8);
  std::fclose(f);
  CHECK(magic[1] == 'P');
  CHECK(magic[2] == 'N');
  CHECK(magic[3] == 'G');
  std::system(("rm -rf " + dir).c_str());
}
