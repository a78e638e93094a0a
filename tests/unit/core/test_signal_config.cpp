// Signal configs (libgtcore/signal_config.h): the original GT's YAML schema, validation with
// errors naming file and key, the shipped examples in etc/gt/sharding/, and the
// communication-instruction attribute layout (libgtcore/comm.h).
#include <catch2/catch.hpp>

#include "libgtcore/comm.h"
#include "libgtcore/signal_config.h"
#include "require_ok.h"

using namespace gt;

TEST_CASE("signal configs parse the original schema", "[signal_config]") {
  auto r = parse_signal_configs(R"(
dp:
  shard: {axis: 0, workers: [0, 1], replicated: false}
  backward: dp_bwd
  compile: true
everywhere:
  shard: {axis: -1}
replicas:
  shard: {replicated: true}
plain:
)",
                                "t.yaml");
  GT_REQUIRE_OK(r);
  const auto& m = *r;
  REQUIRE(m.size() == 4);
  REQUIRE(m.at("dp").shard);
  CHECK(m.at("dp").shard->axis == 0);
  CHECK(m.at("dp").shard->workers == std::vector<uint32_t>{0, 1});
  CHECK(m.at("dp").backward == "dp_bwd");
  CHECK(m.at("dp").compile == true);
  CHECK_FALSE(m.at("plain").compile.has_value());  // unset: hot paths detected as usual
  CHECK(m.at("everywhere").shard->axis == -1);
  CHECK(m.at("everywhere").shard->workers.empty());  // omitted: all workers
  CHECK(m.at("replicas").shard->replicated);
  CHECK_FALSE(m.at("plain").shard);
}

TEST_CASE("signal config errors name the file and the key", "[signal_config]") {
  auto bad = [](const std::string& text) {
    auto r = parse_signal_configs(text, "cfg.yaml");
    REQUIRE_FALSE(r.is_ok());
    return r.status().message();
  };
  CHECK_THAT(bad("dp: {shard: {axes: 0}}"), Catch::Contains("cfg.yaml") && Catch::Contains("axes"));
  CHECK_THAT(bad("dp: {sharding: {axis: 0}}"), Catch::Contains("sharding"));
  CHECK_THAT(bad("dp: {shard: {axis: 42}}"), Catch::Contains("dp.shard.axis"));
  CHECK_THAT(bad("dp: {shard: {workers: [0, 0]}}"), Catch::Contains("twice"));
  CHECK_THAT(bad("dp: {shard: {workers: [-1]}}"), Catch::Contains("bad worker"));
  CHECK_THAT(bad("dp: {shard: {workers: []}}"), Catch::Contains("empty"));
  CHECK_THAT(bad("dp: {shard: {axis: x}}"), Catch::Contains("axis"));
  CHECK_THAT(bad("- just\n- a list"), Catch::Contains("mapping"));
  auto ok = parse_signal_configs("dp: {shard: {workers: [0, 5]}}", "cfg.yaml");
  GT_REQUIRE_OK(ok);
  CHECK_THAT(check_signal_workers(*ok, {0, 1, 2}, "cfg.yaml").message(),
             Catch::Contains("no worker 5") && Catch::Contains("cfg.yaml"));
  GT_CHECK_OK(check_signal_workers(*ok, {0, 5}, "cfg.yaml"));
}

TEST_CASE("the shipped sharding examples load", "[signal_config]") {
  const std::string dir = std::string(GT_SOURCE_DIR) + "/etc/gt/sharding/";
  auto dp = load_signal_configs(dir + "data_parallel.yaml");
  GT_REQUIRE_OK(dp);
  CHECK(dp->at("data").shard->axis == 0);
  auto mp = load_signal_configs(dir + "model_parallel.yaml");
  GT_REQUIRE_OK(mp);
  CHECK(mp->at("column").shard->axis == 1);
  CHECK(mp->at("row").shard->axis == 0);
  CHECK(mp->at("replicated").shard->replicated);
  auto pp = load_signal_configs(dir + "pipeline.yaml");
  GT_REQUIRE_OK(pp);
  CHECK(pp->at("stage1").shard->workers == std::vector<uint32_t>{1});
  CHECK(pp->at("stage1").backward == "stage1");
}

TEST_CASE("communication attributes round-trip and are validated", "[comm]") {
  std::vector<uint32_t> g = {3, 1, 4};
  std::vector<int64_t> ext = {2, 3, 1};
  OpAttrs a = make_all_gather(77, 1, g, ext);
  auto d = decode_comm(CommId::k_all_gather, a, 1);
  GT_REQUIRE_OK(d);
  CHECK(d->tag == 77);
  CHECK(d->axis == 1);
  CHECK(d->workers == g);
  CHECK(d->extents == ext);
  CHECK(d->self_index == 1);
  TensorMeta in{Shape{5, 3, 2}, DType::kFloat32};
  auto m = infer_comm_meta(CommId::k_all_gather, std::span<const TensorMeta>(&in, 1), a, *d);
  GT_REQUIRE_OK(m);
  CHECK(m->shape == Shape{5, 6, 2});
  auto rs = infer_comm_meta(CommId::k_reduce_scatter, std::span<const TensorMeta>(&in, 1), a, *d);
  CHECK_FALSE(rs.is_ok());  // reduce_scatter needs the whole extent (6) as input
  CHECK_FALSE(decode_comm(CommId::k_all_gather, a, 9).is_ok());  // not a member
  OpAttrs dup = make_all_reduce(1, ReduceKind::kSum, std::vector<uint32_t>{2, 2});
  CHECK_FALSE(decode_comm(CommId::k_all_reduce, dup, 2).is_ok());
  OpAttrs send = make_send(4, 5);
  CHECK_FALSE(decode_comm(CommId::k_send, send, 4).is_ok());  // to itself
  GT_CHECK_OK(decode_comm(CommId::k_send, send, 0));
}
