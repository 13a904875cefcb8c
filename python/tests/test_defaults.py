"""kvikio.defaults: every setting through get/set, the context manager and bad input."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import kvikio
import kvikio.defaults

NEW_VALUES = {
    "compat_mode": kvikio.CompatMode.OFF,
    "num_threads": 3,
    "task_size": 1 << 20,
    "gds_threshold": 12345,
    "bounce_buffer_size": 2 << 20,
    "auto_direct_io_read": True,
    "auto_direct_io_write": False,
    "http_max_attempts": 7,
    "http_status_codes": [500, 503],
    "http_timeout": 9,
    "auto_direct_io_read_overread": True,
    "remote_verbose": True,
    "batch_backend": "thread_pool",
    "thread_pool_per_block_device": True,
    "remote_io_backend": "MULTI_POLL",
    "remote_io_num_reactors": 2,
    "remote_io_reactor_dispatch": "PER_PREAD",
    "remote_io_max_concurrent_requests": 0,
}


def test_keys_are_every_setting():
    assert sorted(kvikio.defaults.keys()) == sorted(NEW_VALUES)


@pytest.mark.parametrize("key", sorted(NEW_VALUES))
def test_set_and_get_each_setting(key):
    before = kvikio.defaults.get(key)
    assert before != NEW_VALUES[key]
    kvikio.defaults.set(key, NEW_VALUES[key])  # a plain call: stays set
    assert kvikio.defaults.get(key) == NEW_VALUES[key]
    kvikio.defaults.set({key: before})
    assert kvikio.defaults.get(key) == before


def test_context_manager_restores_previous_values():
    before = {k: kvikio.defaults.get(k) for k in NEW_VALUES}
    with kvikio.defaults.set(NEW_VALUES):
        for key, value in NEW_VALUES.items():
            assert kvikio.defaults.get(key) == value
    assert {k: kvikio.defaults.get(k) for k in NEW_VALUES} == before


def test_context_manager_restores_after_exception():
    before = kvikio.defaults.get("num_threads")
    with pytest.raises(ZeroDivisionError):
        with kvikio.defaults.set("num_threads", before + 2):
            assert kvikio.defaults.get("num_threads") == before + 2
            1 / 0
    assert kvikio.defaults.get("num_threads") == before


def test_nested_context_managers():
    with kvikio.defaults.set("task_size", 1000):
        with kvikio.defaults.set({"task_size": 2000, "gds_threshold": 5}):
            assert kvikio.defaults.get("task_size") == 2000
        assert kvikio.defaults.get("task_size") == 1000


def test_keyword_form():
    with kvikio.defaults.set(num_threads=2, task_size=4096):
        assert kvikio.defaults.get("num_threads") == 2
        assert kvikio.defaults.get("task_size") == 4096


def test_compat_mode_accepts_strings():
    with kvikio.defaults.set("compat_mode", "on"):
        assert kvikio.defaults.get("compat_mode") == kvikio.CompatMode.ON
        assert kvikio.defaults.is_compat_mode_preferred()


def test_seed_settings_examples_apply():
    kvikio.defaults.set({"num_threads": 16, "task_size": 8 * 1024 * 1024})
    assert kvikio.defaults.get("num_threads") == 16
    assert kvikio.defaults.get("task_size") == 8 * 1024 * 1024


def test_unknown_key_raises_key_error_naming_it():
    with pytest.raises(KeyError, match="no_such_setting"):
        kvikio.defaults.get("no_such_setting")
    before = kvikio.defaults.get("num_threads")
    with pytest.raises(KeyError, match="nthreads"):
        kvikio.defaults.set({"num_threads": before + 1, "nthreads": 2})
    assert kvikio.defaults.get("num_threads") == before  # nothing changed


@pytest.mark.parametrize(
    "key,value",
    [
        ("num_threads", 0),
        ("num_threads", -1),
        ("num_threads", "4"),
        ("task_size", 0),
        ("task_size", -4096),
        ("task_size", 1.5),
        ("bounce_buffer_size", 0),
        ("gds_threshold", -1),
        ("auto_direct_io_read", "yes"),
        ("compat_mode", "sometimes"),
        ("compat_mode", 3),
        ("http_max_attempts", 0),
        ("http_status_codes", [99]),
        ("http_status_codes", "500"),
        ("http_status_codes", []),
        ("http_timeout", 0),
        ("batch_backend", "uring"),
        ("batch_backend", 1),
    ],
)
def test_bad_values_raise_value_error_naming_setting_and_value(key, value):
    before = kvikio.defaults.get(key)
    with pytest.raises(ValueError, match=f"{key}") as e:
        kvikio.defaults.set(key, value)
    assert repr(value) in str(e.value) or str(value) in str(e.value)
    assert kvikio.defaults.get(key) == before


def test_failed_set_rolls_back_the_earlier_keys():
    before = kvikio.defaults.get("task_size")
    with pytest.raises(ValueError, match="num_threads"):
        kvikio.defaults.set({"task_size": before + 1, "num_threads": 0})
    assert kvikio.defaults.get("task_size") == before


def test_bad_call_shapes():
    with pytest.raises(TypeError):
        kvikio.defaults.set(1, 2, 3)


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KVIKIO_")}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], env=full_env, capture_output=True, text=True, timeout=60
    )


def test_environment_variables_are_read():
    code = (
        "import kvikio.defaults as d;"
        "print(d.get('num_threads'), d.get('task_size'), d.get('compat_mode').name,"
        " d.get('auto_direct_io_read'), d.get('http_status_codes'))"
    )
    r = run_python(
        code,
        KVIKIO_NTHREADS="5",
        KVIKIO_TASK_SIZE="65536",
        KVIKIO_COMPAT_MODE="ON",
        KVIKIO_AUTO_DIRECT_IO_READ="true",
        KVIKIO_HTTP_STATUS_CODES="500,502",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["5", "65536", "ON", "True", "[500,", "502]"]


def test_defaults_without_environment():
    r = run_python(
        "import kvikio.defaults as d; print([d.get(k) for k in ('num_threads', 'task_size',"
        " 'gds_threshold', 'bounce_buffer_size', 'auto_direct_io_read', 'auto_direct_io_write',"
        " 'http_max_attempts', 'http_timeout')], d.get('compat_mode').name)"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        f"[1, {4 << 20}, {16 << 10}, {16 << 20}, False, True, 3, 60] AUTO"
    )


def test_bad_environment_value_is_a_clear_error():
    r = run_python(
        "import kvikio.defaults as d; d.get('num_threads')", KVIKIO_NTHREADS="lots"
    )
    assert r.returncode != 0
    # kvikio.errors.InvalidArgumentError: a ValueError (and upstream's RuntimeError).
    assert "InvalidArgumentError" in r.stderr and "KVIKIO_NTHREADS" in r.stderr and "lots" in r.stderr


# AUTO is decided once, by the C++ library, the same in both languages (DESIGN.md §1): cuFile
# only where GPUDirect Storage really works (libcufile loads, its driver opens and nvidia-fs
# is present). Python used to decide by nvidia-fs alone while C++ decided by the driver.

PREFERRED_AND_FILE_MODE = (
    "import sys, kvikio._lib as lib, kvikio.defaults as d, kvikio.cufile_driver as drv;"
    "f = lib.FileHandle(sys.argv[1], 'r');"
    "print(d.get('compat_mode').name, d.is_compat_mode_preferred(), f.compat_mode.name,"
    " drv.get('is_gds_available'))"
)


def run_mode_probe(path, **env: str) -> list[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("KVIKIO_")}
    full_env.update(env)
    r = subprocess.run(
        [sys.executable, "-c", PREFERRED_AND_FILE_MODE, str(path)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


@pytest.mark.parametrize("mode", ["ON", "OFF", "AUTO"])
def test_is_compat_mode_preferred_is_the_librarys_answer(mode):
    with kvikio.defaults.set("compat_mode", mode):
        expected = kvikio._lib.is_compat_mode_preferred(getattr(kvikio.CompatMode, mode))
        assert kvikio.defaults.is_compat_mode_preferred() is expected
    assert kvikio._lib.is_compat_mode_preferred(kvikio.CompatMode.ON) is True
    assert kvikio._lib.is_compat_mode_preferred(kvikio.CompatMode.OFF) is False
    # AUTO takes cuFile only with GPUDirect Storage proper (which implies a usable driver).
    gds = kvikio.cufile_driver.get("is_gds_available")
    assert kvikio._lib.is_compat_mode_preferred(kvikio.CompatMode.AUTO) is (not gds)


@pytest.mark.parametrize("mode", ["ON", "AUTO"])
def test_environment_compat_mode_decides_the_files_mode(tmp_path, mode):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 4096)
    name, preferred, file_mode, gds = run_mode_probe(path, KVIKIO_COMPAT_MODE=mode)
    assert name == mode
    assert file_mode == ("ON" if preferred == "True" else "OFF")
    if mode == "ON":
        assert preferred == "True"
    else:
        assert preferred == str(gds != "True")


def test_environment_compat_mode_off_forces_cufile():
    code = (
        "import kvikio.defaults as d; print(d.get('compat_mode').name,"
        " d.is_compat_mode_preferred())"
    )
    r = run_python(code, KVIKIO_COMPAT_MODE="OFF")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["OFF", "False"]


def standin_dir() -> str | None:
    """The C++ build's stand-in CUDA and cuFile libraries (KVIKIO_TEST_STANDIN_DIR, or the
    build/tests folder of this checkout), or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.environ.get("KVIKIO_TEST_STANDIN_DIR") or os.path.join(here, "..", "..", "build", "tests")
    libs = ("libkvikio_cuda_standin.so", "libkvikio_cufile_standin.so")
    return d if all(os.path.exists(os.path.join(d, lib)) for lib in libs) else None


@pytest.mark.skipif(standin_dir() is None, reason="stand-in libraries not built (build/tests)")
@pytest.mark.parametrize("nvidia_fs", [False, True])
def test_auto_with_standin_cufile_agrees_with_the_files_mode(tmp_path, nvidia_fs):
    # libcufile loads and its driver opens; AUTO takes cuFile only when nvidia-fs is there.
    d = standin_dir()
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 4096)
    env = {
        "KVIKIO_LIBCUDA_PATH": os.path.join(d, "libkvikio_cuda_standin.so"),
        "KVIKIO_LIBCUFILE_PATH": os.path.join(d, "libkvikio_cufile_standin.so"),
    }
    if nvidia_fs:
        env["KVIKIO_STANDIN_NVIDIA_FS"] = "1"
    name, preferred, file_mode, gds = run_mode_probe(path, **env)
    assert (name, gds) == ("AUTO", str(nvidia_fs))
    assert preferred == str(not nvidia_fs)
    assert file_mode == ("OFF" if nvidia_fs else "ON")
    # OFF still forces cuFile without nvidia-fs.
    name, preferred, file_mode, _ = run_mode_probe(path, KVIKIO_COMPAT_MODE="OFF", **env)
    assert (name, preferred, file_mode) == ("OFF", "False", "OFF")
