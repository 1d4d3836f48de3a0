"""USB4/Thunderbolt networking: thunderbolt-net (TCP only) and the experimental USB4 verbs.

From the kernel's admin-guide/thunderbolt.rst and hellas-ai/thunderbolt-ibverbs
(research domain notes §1f, §2).
"""

from __future__ import annotations

from strixwizard.vendors.base import Note, Vendor

#: What a message costs over thunderbolt-net, said the same way wherever it is said.
TCP_LATENCY_SOURCE = "https://blog.hellas.ai/blog/thunderbolt-ibverbs/"
TCP_LATENCY = (f"tens of µs per message instead of ~5 µs (about 65 µs one-way measured over "
               f"thunderbolt-net, {TCP_LATENCY_SOURCE})")
#: Why thunderbolt-net is not an RDMA path.
TCP_ONLY = (f"USB4/Thunderbolt networking is TCP only: no RDMA verbs, {TCP_LATENCY}. "
            "Keep it for management; put RCCL on a RoCE/InfiniBand NIC link.")
#: What the experimental USB4 verbs are worth.
#: A direct usb4_rdma device that advertised max_qp=1 and could not create an RC QP, while
#: bridge-bound ones advertised 256 and completed RC ping-pong.
MAX_QP_SOURCE = "https://github.com/hellas-ai/nix-strix-halo/pull/67"
VERBS = ("Research-grade: ~7 µs one-way at best, cannot share the port with thunderbolt-net; pin "
         "NCCL_IB_HCA to an exact dev:port if you use it. llama.cpp RPC runs over it "
         "(GGML_RDMA_DEV=usb4_rdmaN) when the device can create an RC QP: a direct usb4_rdma4 "
         "advertised max_qp=1 and `ibv_rc_pingpong` failed with `Couldn't create QP`, while "
         f"bridge-bound ones advertised 256 ({MAX_QP_SOURCE}); usb4.rdma_provider reads max_qp "
         "from `ibv_devinfo -v` and says what each device carries.")

#: The rate a USB4 host-to-host link trains at per direction (2 lanes x 20 Gb/s, USB4 v1).
FULL_RATE_GBPS = 40.0
LINK_RATE_SOURCE = "https://github.com/Geramy/OdinLink-Five/issues/31"
#: Why a Strix Halo pair's USB4 link can come up at half rate, and what brings it back.
HALF_RATE = ("The rate is set when the USB4 connection is made: on Strix Halo pairs, an RJ45 link "
             "up on a node at that moment has given 2 x 10 Gb/s instead of 2 x 20 Gb/s. Unplug the "
             "RJ45 cable, re-attach the USB4 cable, then plug the RJ45 back in (the link keeps its "
             f"rate); a reboot can bring the lower rate back ({LINK_RATE_SOURCE}).")

BOND_SOURCE = "https://github.com/wkljohn/llama.cpp-strix-halo-RCCL-RDMA"
#: Why a balance-rr bond of USB4 links needs net.ipv4.tcp_reordering raised.
BOND_REORDERING = (
    "balance-rr sends one TCP flow's segments over both USB4 cables, so they arrive out of "
    "order; at the default tolerance (3) TCP takes that for loss, and throughput collapses to "
    "about one link. The published bonded Thunderbolt setup sets net.ipv4.tcp_reordering=127 "
    f"and notes it resets at reboot ({BOND_SOURCE}). `strixwizard fix --only "
    "usb4.tcp_reordering` sets it now and in /etc/sysctl.d.")

USB4NET = Vendor(
    family="usb4net",
    name="USB4/Thunderbolt networking",
    short="USB4",
    netdev_drivers=("thunderbolt-net",),
    rdma_driver="thunderbolt_ibverbs",
    hardware_rdma=False,
    rdma_kinds=("usb4",),
    transports=("thunderbolt-net",),
    site_mtu=False,  # thunderbolt-net keeps its 65520 MTU
    notes=(
        Note(TCP_ONLY, "kernel Documentation/admin-guide/thunderbolt.rst"),
        Note(VERBS, "hellas-ai/thunderbolt-ibverbs bench/results/strix-2x40-noiommu/perftest.md"),
        Note("Idle USB4 retimers flap; 40 Gb/s needs a certified cable of 0.8 m or less."),
        Note(HALF_RATE, LINK_RATE_SOURCE),
        Note(BOND_REORDERING, BOND_SOURCE),
        Note("Interfaces are thunderbolt0, thunderbolt1...; they also carry an enx<mac> altname, so "
             "`en*` match rules can capture them.", "kernel admin-guide/thunderbolt.rst"),
    ),
)

#: llama.cpp's RDMA transport: one RC QP per connection (ggml/src/ggml-rpc/transport.cpp,
#: `ibv_create_qp` with IBV_QPT_RC for each socket that negotiates RDMA); a server serves one
#: client connection at a time (ggml-rpc.cpp `ggml_backend_rpc_start_server`: accept, serve,
#: then accept again) and a client keeps one connection per server (`get_dispatcher`). A
#: connection whose QP cannot be made stays on TCP.
LLAMA_TRANSPORT_SOURCE = "https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-rpc/transport.cpp"
#: The fewest QPs a device must advertise to carry llama.cpp RPC: a device that advertised
#: max_qp=1 could not create one RC QP at all (MAX_QP_SOURCE).
LLAMA_MIN_QP = 2
#: What RCCL over USB4 verbs measured, single stream: no gain over sockets.
RCCL_MEASURED_SOURCE = "https://github.com/davidcanar/vllm-strix-halo"
RCCL_MEASURED = ("RCCL: only through a verbs plugin, and measured no faster than sockets at one "
                 "stream (\"sockets beat usb4_rdma0 at every message size\", "
                 f"{RCCL_MEASURED_SOURCE} PATCHES.md §10)")
