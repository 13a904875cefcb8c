"""kvikio.cufile_driver: keys, read-only properties, and behaviour with or without cuFile."""

from __future__ import annotations

import pytest

import kvikio
import kvikio.cufile_driver as drv



def _driver_usable() -> bool:
    try:
        drv.get("major_version")
    except RuntimeError:
        return False
    return True


HAS_DRIVER = _driver_usable()


def test_is_gds_available_is_a_bool():
    assert isinstance(drv.get("is_gds_available"), bool)


def test_unknown_key_raises_key_error_naming_it():
    with pytest.raises(KeyError, match="no_such_property"):
        drv.get("no_such_property")
    with pytest.raises(KeyError, match="pollmode"):
        drv.set("pollmode", True)


@pytest.mark.parametrize("key", ["is_gds_available", "major_version", "minor_version",
                                 "allow_compat_mode", "per_buffer_cache_size",
                                 "max_batch_io_size"])
def test_read_only_properties_refuse_set(key):
    with pytest.raises(ValueError, match=f"'{key}' is read-only"):
        drv.set(key, 1)


@pytest.mark.parametrize("key,value", [("poll_mode", 1), ("poll_thresh_size", -1),
                                       ("max_device_cache_size", "big"),
                                       ("max_pinned_memory_size", True)])
def test_bad_values_raise_value_error(key, value):
    with pytest.raises((ValueError, RuntimeError), match=key):
        drv.set(key, value)


@pytest.mark.skipif(bool(HAS_DRIVER), reason="the cuFile driver is usable here")
@pytest.mark.parametrize("key", ["major_version", "poll_mode", "max_device_cache_size"])
def test_without_driver_properties_raise_runtime_error(key):
    assert drv.get("is_gds_available") is False
    with pytest.raises(RuntimeError, match=key):
        drv.get(key)


@pytest.mark.skipif(not HAS_DRIVER, reason="needs a usable cuFile driver (GPU machine)")
def test_settable_properties_accept_values_with_driver():
    for key in ("poll_mode", "poll_thresh_size", "max_device_cache_size", "max_pinned_memory_size"):
        value = drv.get(key)
        assert isinstance(value, bool if key == "poll_mode" else int)
    with drv.set({"poll_mode": True, "poll_thresh_size": 8, "max_device_cache_size": 1024}):
        pass
    with pytest.raises(ValueError, match="read-only"):
        drv.set("major_version", 2)


@pytest.mark.skipif(not HAS_DRIVER, reason="needs a usable cuFile driver (GPU machine)")
def test_set_round_trips_and_restores_with_driver():
    size = drv.get("max_device_cache_size")
    with drv.set("max_device_cache_size", 1024):
        assert drv.get("max_device_cache_size") == 1024
    assert drv.get("max_device_cache_size") == size
    before = drv.get("poll_mode")
    with drv.set({"poll_mode": not before}):
        assert drv.get("poll_mode") is (not before)
    assert drv.get("poll_mode") is before
