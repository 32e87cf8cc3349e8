"""Load generation and measurement for textgate and the systems it is compared with.

workload.py   seeded, reproducible text workloads (mix, short, long, a user file)
target.py     what a request goes to: Triton gRPC, a v2-protocol URL, the gateway, a fake
load.py       open loop (Poisson, latency from the intended send time), closed loop, ramp
report.py     percentiles, throughput, errors, process CPU/RSS, Triton statistics, plots
padding.py    padded ÷ real tokens for each shape strategy
ceiling.py    bare ONNX Runtime on pre-tokenized, length-sorted batches: the upper bound
server.py     build a repository from a bundle and run tritonserver on it for a measurement
tune.py       a small sweep of batching settings that writes a repository config file
procs.py      servers as subprocesses (gateway, naive, peer): start, wait, pause, stop
ab.py         side-by-side rounds of several systems, the order rotating; their report
summary.py    the bench suite's ratios beside their goals, and its plot
soak.py       the soak: open loop at a share of capacity for minutes, a ledger of events
"""
