"""The command lines of the maintained load generators a neighbour runs (stress-ng, fio, iperf3), and the
parsers of their own reports of what they achieved (stress-ng's YAML metrics, fio's and iperf3's JSON, a database
neighbour's sysbench output). Pure:
no process is started here (running.py does that through hosts/procs.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from layerbench.neighbours.model import Neighbour
from layerbench.sysbench.output import parse_output

RUNTIME = 86_400  # fio and iperf3 run "until stopped": a day, far beyond any run; stop() ends them sooner


def stress_ng_command(neighbour: Neighbour, yaml_path: Path) -> list[str]:
    """stress-ng for a cpu or memory neighbour, running until stopped, writing its metrics to yaml_path."""
    n = str(neighbour.worker_count)
    if neighbour.kind == "cpu":
        load = ["--cpu", n, "--cpu-load", str(neighbour.duty_cycle)]
    elif neighbour.method == "vm":
        load = ["--vm", n, "--vm-bytes", neighbour.file_size, "--vm-keep"]
    else:
        load = ["--stream", n, "--stream-l3-size", neighbour.file_size]
    return ["stress-ng", *load, "--timeout", "0", "--metrics-brief", "--yaml", str(yaml_path)]


FIO_RW = {"randread": "randread", "randwrite": "randwrite", "read": "read", "write": "write", "randrw": "randrw",
          "fsync": "randwrite"}


def fio_command(neighbour: Neighbour, folder: Path, json_path: Path) -> list[str]:
    """fio for a disk neighbour: one job on a bounded file in `folder`, time-based until stopped."""
    pattern = neighbour.disk_pattern
    cmd = ["fio", f"--name=lb-{neighbour.name}", f"--directory={folder}", f"--rw={FIO_RW[pattern]}",
           f"--bs={neighbour.block_size or '4K'}", f"--size={neighbour.file_size}", "--time_based",
           f"--runtime={RUNTIME}", "--ioengine=psync", "--output-format=json", f"--output={json_path}"]
    return cmd + (["--fsync=1"] if pattern == "fsync" else [])


def iperf3_server_command(address: str, port: int, json_path: Path) -> list[str]:
    return ["iperf3", "-s", "-1", "-B", address, "-p", str(port), "-J", "--logfile", str(json_path)]


def iperf3_client_command(neighbour: Neighbour, address: str, port: int, json_path: Path) -> list[str]:
    rate = ["-b", neighbour.bitrate] if neighbour.bitrate else ["-b", "0"]  # 0: as fast as it can
    return ["iperf3", "-c", address, "-p", str(port), "-t", str(RUNTIME), "-P", str(neighbour.streams or 1),
            *rate, "-J", "--logfile", str(json_path)]


def listens_in(table: str, port: int) -> bool:
    """Whether the text of /proc/net/tcp (and tcp6) has a socket listening (state 0A) on `port`."""
    wanted = f":{port:04X}"
    rows = (line.split() for line in table.splitlines())
    return any(len(p) > 3 and p[1].endswith(wanted) and p[3] == "0A" for p in rows)


# --- what the tool said it achieved -----------------------------------------------------------------------


def read_or_value_error(parse: Callable[[str], dict[str, float]]) -> Callable[[str], dict[str, float]]:
    """A parser whose every failure on a damaged or foreign report is a ValueError naming what was wrong."""
    def checked(text: str) -> dict[str, float]:
        try:
            return parse(text)
        except (KeyError, IndexError, TypeError, AttributeError, OverflowError, yaml.YAMLError) as error:
            raise ValueError(f"not a report of the expected shape ({type(error).__name__}: {error})"[:200]) from None
    return checked


@read_or_value_error
def stress_ng_achieved(text: str) -> dict[str, float]:
    """From stress-ng's --yaml file: bogo ops per second (all workers), CPU % per worker, seconds run."""
    data = yaml.safe_load(text) if text.strip() else None
    metrics = data.get("metrics") if isinstance(data, dict) else None
    if not isinstance(metrics, list) or not metrics or not isinstance(metrics[0], dict):
        raise ValueError("no metrics in stress-ng's YAML report")
    first = metrics[0]
    out = {"bogo_ops_per_second": round(float(first["bogo-ops-per-second-real-time"]), 2),
           "cpu_percent_per_worker": round(float(first["cpu-usage-per-instance"]), 1),
           "seconds": round(float(first["wall-clock-time"]), 2)}
    for key, name in (("memory-read-rate-mb-per-sec", "read_mb_per_second"),
                      ("memory-write-rate-mb-per-sec", "write_mb_per_second")):
        if key in first:  # the stream stressor's memory bandwidth (MB: 10**6 bytes, as stress-ng says)
            out[name] = round(float(first[key]), 1)
    return out


def json_document(text: str) -> dict[str, Any]:
    """The JSON object in a tool's output file, after any lines the tool printed before it (fio writes
    `fio: terminating on signal 15` above its JSON)."""
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON report")
    data = json.loads(text[start:])
    if not isinstance(data, dict):
        raise ValueError("the JSON report is not an object")
    return data


@read_or_value_error
def fio_achieved(text: str) -> dict[str, float]:
    """From fio's JSON: read and write operations and bytes per second of the job, and its runtime."""
    job = json_document(text)["jobs"][0]
    out = {"seconds": round(float(job["job_runtime"]) / 1000, 2)}
    for direction in ("read", "write"):
        part = job.get(direction) or {}
        if float(part.get("iops", 0) or 0) > 0:
            out[f"{direction}_iops"] = round(float(part["iops"]), 1)
            out[f"{direction}_bytes_per_second"] = round(float(part["bw_bytes"]), 0)
    sync = (job.get("sync") or {}).get("lat_ns") or {}
    if sync.get("N"):
        out["fsyncs"] = float(sync["N"])
    return out


@read_or_value_error
def iperf3_achieved(text: str) -> dict[str, float]:
    """From iperf3's client JSON: bits per second sent (and received by the server), seconds."""
    end = json_document(text).get("end") or {}
    sent, received = end.get("sum_sent") or {}, end.get("sum_received") or {}
    if not sent:
        raise ValueError("no sum_sent in iperf3's JSON report")
    return {"bits_per_second": round(float(sent["bits_per_second"]), 0),
            "received_bits_per_second": round(float(received.get("bits_per_second", 0)), 0),
            "seconds": round(float(sent.get("seconds", 0)), 2)}


@read_or_value_error
def iperf3_peer_received(text: str) -> float:
    """From the peer's (iperf3 server's) JSON: the bits per second it received. An interrupted client reports 0
    received (the results are not exchanged when it is stopped); the server measured them itself."""
    received = (json_document(text).get("end") or {}).get("sum_received") or {}
    return round(float(received.get("bits_per_second", 0)), 0)


@read_or_value_error
def sysbench_achieved(text: str) -> dict[str, float]:
    """From a database neighbour's own sysbench output (its per-second reports, read by the one parser of
    sysbench's output; it is stopped, so it has no summary): mean transactions and queries per second over its
    whole run, and its seconds."""
    intervals = [i for i in parse_output(text).intervals if i.time > 0]
    if not intervals:
        raise ValueError("no per-second report in its sysbench's output")
    return {"tps": round(sum(i.tps for i in intervals) / len(intervals), 2),
            "qps": round(sum(i.qps for i in intervals) / len(intervals), 1),
            "seconds": round(intervals[-1].time, 2)}
