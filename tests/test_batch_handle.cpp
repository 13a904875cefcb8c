// BatchHandle's POSIX fallback (api/batch.cpp), host memory: lifetimes, errors and the
// release of its files; each regression keeps its finding in its name. The device and cuFile
// paths are tests/test_device.cpp's.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <kvikio/batch.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/file_handle.hpp>

#include "test_utils.hpp"

using kvikio::FileHandle;
using kvikio::test::PoolGate;
using kvikio::test::read_file;
using kvikio::test::TempDir;

// The same rule for BatchHandle's POSIX fallback (issue 28): an operation lets its file go
// before it reports COMPLETE, so that close() right after status() closes the descriptors.
TEST(BatchHandleHardening, Issue28CloseRightAfterCompleteClosesTheDescriptorsThen)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(4);
  const auto path = dir.file("batch_closed.bin");
  const auto data = kvikio::test::random_bytes(8192 + 5, 23);
  for (int round = 0; round < 300; ++round) {
    FileHandle f(path, "w", FileHandle::m644, kvikio::CompatMode::ON);
    kvikio::BatchHandle batch(2);
    batch.submit(
      {{f, const_cast<char*>(data.data()), 0, 0, 4096, CUFILE_WRITE},
       {f, const_cast<char*>(data.data()) + 4096, 4096, 0, data.size() - 4096, CUFILE_WRITE}});
    auto events = batch.status_details(2, 2);
    ASSERT_EQ(events.size(), 2U);
    for (const auto& ev : events) {
      ASSERT_EQ(ev.status, CUFILE_COMPLETE) << ev.error;
    }
    f.close();
    ASSERT_EQ(kvikio::test::descriptors_of(path), 0U)
      << "round " << round << ": close() after COMPLETE left the file open";
  }
  EXPECT_EQ(read_file(path), data);
}

TEST(BatchHandleHardening, Audit17FallbackOwnsTheFileAndReportsWhyAnOperationFailed)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  const auto data = kvikio::test::random_bytes(10000, 18);
  const auto path = dir.file("batch.bin");
  kvikio::test::write_file(path, data);
  std::vector<char> got(data.size()), past(100);
  kvikio::BatchHandle batch(4);
  {
    PoolGate gate;
    auto f = std::make_unique<FileHandle>(path, "r", FileHandle::m644, kvikio::CompatMode::ON);
    batch.submit({{*f, got.data(), 0, 0, got.size(), CUFILE_READ},
                  {*f, past.data(), 20000, 0, past.size(), CUFILE_READ}});
    f.reset();  // the FileHandle is gone before the operations run
  }
  auto events = batch.status_details(2, 2);
  ASSERT_EQ(events.size(), 2U);
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return reinterpret_cast<std::uintptr_t>(a.cookie) < reinterpret_cast<std::uintptr_t>(b.cookie);
  });
  EXPECT_EQ(events[0].status, CUFILE_COMPLETE) << events[0].error;
  EXPECT_EQ(events[0].ret, data.size());
  EXPECT_EQ(got, data);
  EXPECT_EQ(events[1].status, CUFILE_FAILED);
  EXPECT_EQ(events[1].ret, 0U);
  EXPECT_NE(events[1].error.find("read past the end of file"), std::string::npos)
    << events[1].error;
  EXPECT_NE(events[1].error.find(path), std::string::npos) << events[1].error;
}

TEST(BatchHandleHardening, Audit17FallbackReportsTheErrnoOfAnOsError)
{
  TempDir dir;
  const auto path = dir.file("batch_errno.bin");
  kvikio::test::write_file(path, std::vector<char>(100, 'x'));
  FileHandle f(path, "r", FileHandle::m644, kvikio::CompatMode::ON);
  std::vector<char> buf(10, 'y');
  // A write on a read-only descriptor (behind the mode check): pwrite(2) fails with EBADF.
  FileHandle w(path, "r+", FileHandle::m644, kvikio::CompatMode::ON);
  ASSERT_GE(::dup2(f.fd(), w.fd()), 0);
  kvikio::BatchHandle batch(1);
  batch.submit({{w, buf.data(), 0, 0, buf.size(), CUFILE_WRITE}});
  auto events = batch.status_details(1, 1);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].status, CUFILE_FAILED);
  EXPECT_EQ(events[0].error_code, EBADF) << events[0].error;
  EXPECT_NE(events[0].error.find(path), std::string::npos) << events[0].error;
}
