"""Issue 13: the benchmark modules accept upstream KvikIO's command-line flags."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_single_node_io_upstream_flags(tmp_path):
    work = tmp_path / "dir"
    work.mkdir()
    r = run("kvikio.benchmarks.single_node_io", "-n", "1 MiB", "-d", str(work), "--nruns", "1",
            "-t", "2", "--api", "cufile", "posix", "--pre-register-buffer", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["size"] == 1 << 20 and out["threads"] == 2 and out["repetitions"] == 1
    assert out["file"].startswith(str(work))
    assert [x["op"] for x in out["results"]] == ["write", "read"]
    assert not list(work.iterdir())  # the temporary file is removed
    r = run("kvikio.benchmarks.single_node_io", "--nbytes", "1MB", "--nthreads", "1",
            "--nruns", "1", "--api", "all", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["size"] == 10**6


def test_single_node_io_rejects_unknown_api(tmp_path):
    r = run("kvikio.benchmarks.single_node_io", "--api", "nope", cwd=tmp_path)
    assert r.returncode == 2 and "invalid choice: 'nope'" in r.stderr


def test_zarr_io_upstream_flags_parse(tmp_path):
    r = run("kvikio.benchmarks.zarr_io", "-n", "1 MiB", "--chunksize", "256 KiB", "--dtype",
            "float64", "--nruns", "1", "--n-warmup-runs", "0", "-t", "2", "--api", "kvikio",
            "--drop-vm-cache", "-d", str(tmp_path), "--help", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run("kvikio.benchmarks.zarr_io", "--dtype", "nonsense", cwd=tmp_path)
    assert r.returncode == 2 and "not a NumPy dtype" in r.stderr


def test_zarr_io_runs_with_upstream_flags(tmp_path):
    pytest.importorskip("cupy")
    pytest.importorskip("zarr")
    r = run("kvikio.benchmarks.zarr_io", "-n", "1 MiB", "--chunksize", "256 KiB", "--dtype",
            "float64", "--nruns", "1", "-t", "2", "--api", "all", "--drop-vm-cache",
            "-d", str(tmp_path), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out["gbps"]) == {"GDSStore", "LocalStore+cupy.asarray"}


def test_http_io_with_the_bundled_server(tmp_path):
    r = run("kvikio.benchmarks.http_io", "-n", "100000", "--dtype", "int32", "--nruns", "2",
            "-t", "2", "--api", "numpy", "--bundled-server-lifetime", "60", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "http_io:" in r.stdout and "100000 x int32" in r.stdout
    assert "numpy" in r.stdout and "MB/s" in r.stdout and "median of 2" in r.stdout


def test_http_io_bad_options(tmp_path):
    r = run("kvikio.benchmarks.http_io", "--server", "http://127.0.0.1:1", cwd=tmp_path)
    assert r.returncode == 2 and "--server-root-path" in r.stderr
    r = run("kvikio.benchmarks.http_io", "--api", "torch", cwd=tmp_path)
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_s3_io_with_the_bundled_server(tmp_path):
    pytest.importorskip("moto.server")
    pytest.importorskip("boto3")
    r = run("kvikio.benchmarks.s3_io", "--use-bundled-server", "-n", "50000", "--nruns", "1",
            "-t", "2", "--api", "numpy", "cudf-kvikio", "--bucket", "bench", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "s3_io: s3://bench/" in r.stdout and "numpy" in r.stdout
    assert "skipping cudf-kvikio" in r.stderr
