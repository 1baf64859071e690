"""Shared scenario text for the workload tests."""

# A small RPC scenario on the direct fabric: one server endpoint on the last NIC, clients 16 per node and 4
# NICs per node from NIC 0.  Template variables select the policy under test.
SMALL = """\
name: small
seed: {{ seed | default(3) }}
fabric:
  topology: direct
  endpoints: {{ endpoints | default(64) }}
nic: {{ nic | default("{}") }}
rpc_server:
  strategy: {{ strategy | default("multi_recv") }}
  threads_per_engine: {{ threads | default(1) }}
  nics_per_node: 1
  first_nic: {{ (endpoints | default(64)) - 1 }}
  service_ns: {{ service_ns | default(390) }}
  post_init: {{ post_init | default(512) }}
  post_incr: {{ post_incr | default(512) }}
  multi_recv_buffers: {{ buffers | default(4) }}
  multi_recv_bytes: {{ buffer_bytes | default(2097152) }}
  protocol: {{ protocol | default("cxi") }}
  vnis: [{{ server_vni | default(10) }}]
  cxi:
    rx_match_mode: {{ match_mode | default("hybrid") }}
rpc_client:
  processes: {{ clients | default(64) }}
  processes_per_node: 16
  nics_per_node: 4
  in_flight: {{ in_flight | default(4) }}
  ep_credits: {{ credits | default(0) }}
  quota: {{ quota | default(0) }}
  timeout_us: {{ timeout_us | default(0) }}
  max_retries: {{ retries | default(0) }}
  vni: {{ client_vni | default(10) }}
  drain: true
  warmup_us: {{ warmup_us | default(20) }}
  measure_us: {{ measure_us | default(300) }}
  cxi:
    rx_match_mode: {{ match_mode | default("hybrid") }}
stats:
  timeseries_interval_ns: 5000
"""


# Bulk RPCs on the direct fabric: one server thread, clients 1 in flight, provider settings per MR method.
BULK = """\
name: bulk
seed: 5
fabric:
  topology: direct
  endpoints: 9
nic: {}
cxi:
  env:
    optimized_mrs: false
    prov_key_cache: {{ cache | default("true") }}
    mr_match_events: false
rpc_server:
  strategy: multi_recv
  nics_per_node: 1
  first_nic: 8
  service_ns: {{ service_ns | default(40000) }}
rpc_client:
  processes: {{ clients | default(8) }}
  processes_per_node: 1
  nics_per_node: 1
  in_flight: 1
  timeout_us: {{ timeout_us | default(30) }}
  drain: true
  warmup_us: 0
  measure_us: {{ measure_us | default(1000) }}
  bulk:
    bytes: 65536
    op: write
    mr_method: {{ method | default("prov_key_cache") }}
    deadlines: {{ deadlines | default("false") }}
"""
