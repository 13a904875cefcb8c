"""RemoteFile writes (issue 15): S3 multipart / PutObject against moto with SigV4 checked,
presigned PUT URLs made by boto3, WebHDFS CREATE/APPEND through the data-node redirect."""

from __future__ import annotations

import io
import random
import threading

import numpy as np
import pytest

import kvikio
from kvikio.errors import ClosedFileError
from kvikio.remote_file import (
    RemoteError,
    RemoteFile,
    RemoteHttpError,
    RemoteIncompleteWriteError,
    RemoteModeError,
    RemoteWriteError,
    RemoteWritePastEndError,
)

MIB = 1 << 20
PART = 5 * MIB
BUCKET = "write-bucket"


@pytest.fixture(scope="module")
def s3(s3_server):
    import boto3
    from botocore.config import Config

    s3_server.process.command(cmd="bucket", bucket=BUCKET)
    client = boto3.client(
        "s3",
        endpoint_url=s3_server.endpoint,
        region_name="us-east-1",
        aws_access_key_id=s3_server.key,
        aws_secret_access_key=s3_server.secret,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    s3_server.client = client
    return s3_server


def open_w(s3, key, **kw):
    return RemoteFile.open_s3(
        BUCKET,
        key,
        aws_region_name="us-east-1",
        aws_access_key_id=s3.key,
        aws_secret_access_key=s3.secret,
        aws_endpoint_url=s3.endpoint,
        mode="w",
        **kw,
    )


def exists(s3, key) -> bool:
    r = s3.client.list_objects_v2(Bucket=BUCKET, Prefix=key)
    return any(o["Key"] == key for o in r.get("Contents", []))


def open_uploads(s3) -> int:
    return len(s3.client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []))


def get(s3, key) -> bytes:
    return s3.client.get_object(Bucket=BUCKET, Key=key)["Body"].read()


def payload(n, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


@pytest.mark.parametrize("size", [0, 1, PART - 1, PART, PART + 1, 3 * PART + 12345])
def test_s3_round_trip_byte_for_byte(s3, size):
    data = payload(size, size)
    key = f"py/size-{size}"
    with kvikio.defaults.set({"num_threads": 4}):
        with open_w(s3, key, part_size=PART) as f:
            assert f.mode() == "w"
            step = MIB + 4097
            for pos in range(0, size, step):
                assert f.write(data[pos : pos + step]) == min(step, size - pos)
            assert f.nbytes() == size
            assert not exists(s3, key)  # nothing visible before close
    assert get(s3, key) == data.tobytes()
    assert open_uploads(s3) == 0
    # Read back through kvikio too.
    with RemoteFile.open_s3(
        BUCKET,
        key,
        aws_region_name="us-east-1",
        aws_access_key_id=s3.key,
        aws_secret_access_key=s3.secret,
        aws_endpoint_url=s3.endpoint,
    ) as r:
        back = np.empty(size, dtype=np.uint8)
        assert r.read(back) == size
        assert np.array_equal(back, data)


def test_s3_out_of_order_pwrites_from_threads(s3):
    size = 3 * PART + 4567
    data = payload(size, 5)
    pieces = [(o, min(700_001, size - o)) for o in range(0, size, 700_001)]
    random.Random(7).shuffle(pieces)
    errors = []
    with kvikio.defaults.set({"num_threads": 4}):
        with open_w(s3, "py/shuffled", part_size=PART) as f:

            def work(t):
                try:
                    for off, n in pieces[t::4]:
                        assert f.pwrite(data[off : off + n], file_offset=off).get() == n
                except Exception as e:  # pragma: no cover - reported below
                    errors.append(e)

            threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert not errors
    assert get(s3, "py/shuffled") == data.tobytes()


def test_s3_url_forms_and_environment(s3, monkeypatch):
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    data = payload(PART + 3, 1)
    with RemoteFile.open_s3_url(f"s3://{BUCKET}/py/by-s3-url", mode="w") as f:
        f.write(data)
    with RemoteFile.open_s3_url(f"{s3.endpoint}/{BUCKET}/py/by-http-url", mode="w") as f:
        f.write(data[:10])
    assert get(s3, "py/by-s3-url") == data.tobytes()
    assert get(s3, "py/by-http-url") == data[:10].tobytes()


def test_s3_hole_raises_and_leaves_nothing(s3):
    data = payload(2 * PART + 5, 2)
    f = open_w(s3, "py/holey", part_size=PART)
    f.pwrite(data[:PART], file_offset=0).get()
    f.pwrite(data[PART + 100 :], file_offset=PART + 100).get()
    with pytest.raises(RemoteIncompleteWriteError, match=r"\[5242880, 5242980\)") as e:
        f.close()
    assert isinstance(e.value, RemoteError) and isinstance(e.value, RuntimeError)
    assert "/write-bucket/py/holey" in e.value.url
    assert not exists(s3, "py/holey")
    assert open_uploads(s3) == 0
    assert f.closed


def test_s3_exception_inside_with_aborts(s3):
    data = payload(3 * PART, 3)
    with pytest.raises(ZeroDivisionError):
        with open_w(s3, "py/with-error", part_size=PART) as f:
            f.write(data)
            1 / 0
    assert not exists(s3, "py/with-error")
    assert open_uploads(s3) == 0
    f = open_w(s3, "py/aborted", part_size=PART)
    f.write(data)
    f.abort()
    f.abort()
    assert not exists(s3, "py/aborted")
    assert open_uploads(s3) == 0


def test_s3_injected_part_failure_leaves_nothing(s3):
    data = payload(4 * PART, 4)
    s3.process.command(cmd="fail", query="partNumber=3&", status=400, count=1)
    with pytest.raises(RemoteHttpError, match="UploadPart 3") as e:
        with open_w(s3, "py/failing", part_size=PART) as f:
            f.write(data)
    assert e.value.http_status == 400
    assert s3.secret not in str(e.value)
    assert not exists(s3, "py/failing")
    assert open_uploads(s3) == 0


def test_s3_presigned_put_made_by_boto3(s3):
    url = s3.client.generate_presigned_url(
        "put_object", Params={"Bucket": BUCKET, "Key": "py/presigned"}, ExpiresIn=600
    )
    data = payload(6 * MIB + 1, 6)
    with s3.anonymous_access():  # moto cannot check query-string signatures with IAM auth on
        with RemoteFile.open_s3_presigned_url(url, mode="w") as f:
            f.write(data[MIB:], file_offset=MIB)
            f.write(data[:MIB], file_offset=0)
        assert get(s3, "py/presigned") == data.tobytes()


def test_s3_errors_are_typed(s3):
    with pytest.raises(ValueError, match="outside S3's limits"):
        open_w(s3, "py/x", part_size=PART - 1)
    with pytest.raises(ValueError, match="1024"):
        open_w(s3, "k" * 1025)
    with pytest.raises(ValueError, match="mode must be"):
        RemoteFile.open_s3(BUCKET, "py/x", mode="x")
    f = RemoteFile.open_s3(
        "no-such-bucket",
        "k",
        aws_region_name="us-east-1",
        aws_access_key_id=s3.key,
        aws_secret_access_key=s3.secret,
        aws_endpoint_url=s3.endpoint,
        mode="w",
    )
    f.write(b"abc")
    with pytest.raises(RemoteHttpError, match="NoSuchBucket") as e:
        f.close()
    assert e.value.http_status == 404 and e.value.url.endswith("/no-such-bucket/k")

    with open_w(s3, "py/declared", nbytes=10) as w:
        with pytest.raises(RemoteWritePastEndError, match=r"declared size \(10"):
            w.write(b"x" * 11)
        with pytest.raises(RemoteModeError, match="opened for writing") as e:
            w.read(bytearray(10))
        assert isinstance(e.value, io.UnsupportedOperation)
        w.write(b"0123456789")
    assert get(s3, "py/declared") == b"0123456789"
    r = RemoteFile.open_s3(
        BUCKET,
        "py/declared",
        aws_region_name="us-east-1",
        aws_access_key_id=s3.key,
        aws_secret_access_key=s3.secret,
        aws_endpoint_url=s3.endpoint,
    )
    with pytest.raises(RemoteModeError, match="opened for reading"):
        r.write(b"x")


def test_s3_device_memory_round_trip(s3, cupy):
    data = payload(2 * PART + 777, 12)
    with open_w(s3, "py/from-device", part_size=PART) as f:
        f.write(cupy.asarray(data))
    assert get(s3, "py/from-device") == data.tobytes()


# ------------------------------------------------------------------------------ WebHDFS


def test_webhdfs_create_append_and_abort(webhdfs_server, remote_root):
    url = f"http://127.0.0.1:{webhdfs_server.port}/webhdfs/v1/written/py.bin"
    data = payload(3 * MIB + 5, 21)
    with RemoteFile.open_webhdfs(url, mode="w", part_size=MIB) as f:
        f.pwrite(data[2 * MIB :], file_offset=2 * MIB).get()
        f.pwrite(data[: 2 * MIB], file_offset=0).get()
    more = payload(MIB + 17, 22)
    with RemoteFile.open_webhdfs(url, mode="a", part_size=MIB) as f:
        f.write(more)
    assert (remote_root / "written" / "py.bin").read_bytes() == data.tobytes() + more.tobytes()
    with RemoteFile.open_webhdfs(url) as r:
        back = np.empty(r.nbytes(), dtype=np.uint8)
        r.read(back)
        assert back.tobytes() == data.tobytes() + more.tobytes()
    with pytest.raises(ZeroDivisionError):
        with RemoteFile.open_webhdfs(url, mode="a", part_size=MIB) as f:
            f.write(payload(3 * MIB, 1))
            1 / 0
    assert (remote_root / "written" / "py.bin").read_bytes() == data.tobytes() + more.tobytes()
    # overwrite=False: the hidden file cannot be renamed onto the existing one; it is kept.
    with pytest.raises(RemoteWriteError, match="overwrite is false"):
        with RemoteFile.open_webhdfs(url, mode="w", overwrite=False) as f:
            f.write(b"x")
    assert (remote_root / "written" / "py.bin").read_bytes() == data.tobytes() + more.tobytes()
    assert not [p for p in (remote_root / "written").iterdir() if "kvikio-partial" in p.name]


def test_webhdfs_failed_overwrite_keeps_the_old_file(webhdfs_server, remote_root):
    # Issue 23 (F2): mode "w" writes a hidden sibling renamed onto the file at close, so an
    # exception inside `with` leaves the old file as it was (it used to be deleted).
    (remote_root / "written").mkdir(exist_ok=True)
    old = payload(1000, 31).tobytes()
    (remote_root / "written" / "old.bin").write_bytes(old)
    url = f"http://127.0.0.1:{webhdfs_server.port}/webhdfs/v1/written/old.bin"
    with pytest.raises(ZeroDivisionError):
        with RemoteFile.open_webhdfs(url, mode="w", part_size=64 << 10) as f:
            f.write(payload(3 * 64 << 10, 32))  # three parts sent already
            assert (remote_root / "written" / "old.bin").read_bytes() == old
            1 / 0
    assert (remote_root / "written" / "old.bin").read_bytes() == old
    assert not [p for p in (remote_root / "written").iterdir() if "kvikio-partial" in p.name]


# ------------------------------------------------------------------------------ lifetime


@pytest.mark.parametrize("how", ["abort", "close", "with"])
def test_close_or_abort_while_threads_write_is_safe(s3, how):
    # Issue 23 (F14): close()/abort() (and an exception leaving `with`) while other threads
    # write used to free the part buffers under their copies (SIGSEGV). Now the writes under
    # way finish, later ones raise RemoteModeError, and nothing is left on an abort.
    size = 64 * MIB
    chunk = payload(4 * MIB, 33)
    key = f"py/lifetime-{how}"
    f = open_w(s3, key, nbytes=size, part_size=size)  # one PutObject at close
    errors = []

    def writer(t):
        try:
            for _ in range(1000):
                for at in range(t * 16 * MIB, (t + 1) * 16 * MIB, chunk.nbytes):
                    f.write(chunk, file_offset=at)
        except BaseException as e:  # noqa: BLE001 - checked below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    threading.Event().wait(0.005)
    if how == "abort":
        f.abort()
    elif how == "close":
        # Committed when every byte was written by then; else a hole: nothing. The call says.
        try:
            f.close()
            committed = True
        except RemoteIncompleteWriteError:
            committed = False
    else:
        with pytest.raises(ZeroDivisionError):
            with f:
                1 / 0
    for t in threads:
        t.join()
    # The handle's own RemoteModeError, or the binding's ClosedFileError once the Python
    # object has let the handle go.
    assert len(errors) == 4, errors
    assert all(isinstance(e, (RemoteModeError, ClosedFileError)) for e in errors), errors
    assert exists(s3, key) == (how == "close" and committed)
    if how == "close" and committed:
        assert len(get(s3, key)) == size
    assert open_uploads(s3) == 0


def test_max_buffered_parts_is_exposed(s3):
    # Issue 23 (F4): Python can set the bound of parts held in memory.
    data = payload(10, 34)
    with open_w(s3, "py/bound", part_size=PART, max_buffered_parts=2) as f:
        f.write(data, file_offset=0)
        f.write(data, file_offset=PART)
        with pytest.raises(RemoteWriteError, match="max_buffered_parts = 2"):
            f.write(data, file_offset=2 * PART)
        f.abort()
    with pytest.raises(ValueError, match="max_buffered_parts"):
        RemoteFile.open_s3(BUCKET, "py/bound", nbytes=1, aws_region_name="us-east-1",
                           aws_access_key_id=s3.key, aws_secret_access_key=s3.secret,
                           aws_endpoint_url=s3.endpoint, max_buffered_parts=2)


# ------------------------------------------------------------------------------ README


def readme_write_examples() -> list[str]:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text.split("## Writing remote objects", 1)[1].split("\n## ", 1)[0]
    return [b.split("```", 1)[0] for b in section.split("```python\n")[1:]]


def test_readme_write_examples_run(s3, webhdfs_server, remote_root, monkeypatch):
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    blocks = readme_write_examples()
    assert len(blocks) == 3
    s3_block, presigned_block, webhdfs_block = blocks
    # The AWS URL of the example points at the local server (path style).
    exec(s3_block.replace("https://my-bucket.s3.us-east-1.amazonaws.com", f"{s3.endpoint}/my-bucket"), {})
    a = np.arange(3_000_000, dtype=np.float32)
    objects = {o["Key"]: o for o in s3.client.list_objects_v2(Bucket="my-bucket", Prefix="out/")["Contents"]}
    read = lambda k: s3.client.get_object(Bucket="my-bucket", Key=k)["Body"].read()  # noqa: E731
    assert read("out/a.bin") == a.tobytes()
    assert read("out/b.bin") == a.tobytes()
    assert read("out/c.bin") == b"small objects are one PutObject"
    assert len(objects) == 3
    with s3.anonymous_access():  # moto cannot check query-string signatures with IAM auth on
        exec(presigned_block, {})
        assert read("out/presigned.bin") == b"hello from a presigned URL"
    base = f"http://127.0.0.1:{webhdfs_server.port}"
    exec(webhdfs_block.replace("http://namenode:9870", base), {})
    assert (remote_root / "user" / "me" / "log.txt").read_bytes() == b"first line\nsecond line\n"
