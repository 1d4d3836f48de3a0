"""From a measured fabric to a predicted decode speed: `strixwizard test decode`.

In tensor-parallel decode every token costs two all-reduces per layer, each of
about batch x hidden x dtype bytes, while the compute of a token is bound by
reading its weights from memory. So, per token (one decode step)::

    t_comm = 2 · L · t_allreduce(batch x hidden x dtype_bytes)
    t_comp = bytes of weights read per step / (TP · memory bandwidth per node)
    tokens/s = batch / (t_comm + t_comp)

Modules (pure unless said): `shapes` (a model's shape from a Hugging Face
config.json), `gguf_shape` (from a GGUF file's metadata, reads the file's header with
`gguf_header`, standard library only),
`catalog` (popular models shipped as data, and `--model` resolution),
`bandwidth` (the Strix Halo memory bandwidth default and its sources),
`collectives` (all-reduce times per size and transport; the ring estimate),
`predict` (the model), `calibrate` (`--calibrate`: one node's measured decode speed in place
of the bandwidth estimate), `document` (the "decode" JSON of the test report),
`text` (the table), `fabric` (the same from a Test step's results, for the wizard's panel),
`links` (USB4 networking beside the NIC), `measure` (runs the all-reduce and ping-pongs on
nodes), `advise` (`strixwizard advise`: one node, llama.cpp RPC layer split, `-sm tensor` or
vLLM TP per interconnect, and does RDMA help; also the "advice" of a decode report),
`rpc_builds` (llama.cpp RPC's waits per token by protocol version, measured or read from its
source). The
`strixwizard test decode` is declared in `strixwizard/live/kinds/decode.py` (its options, how
they become settings, its runner, demo, document and text); `strixwizard advise` is `cli/advise.py`.

The "decode" object of `strixwizard test decode --json` (schema:
strixwizard/schema/decode.schema.json)::

    {"model": {"name", "layers", "hidden", "dtype_bytes", "active_params_b", "source",
               "total_params_b", "weight_bytes_per_token", "weight_bytes_total", "moe"},
     "mem_bandwidth_gbps": 212.0, "mem_bandwidth_source": "...",
     "collectives": [{"transport", "size_bytes", "allreduce_us",
                      "source": "measured|estimated|recorded", "tool", "note"}],
     "predictions": [{"transport", "tp", "batch", "tokens_per_s", "t_comm_ms", "t_comp_ms",
                      "comm_share", "source", "fits", "note"}],
     "assumptions": ["..."]}
"""
