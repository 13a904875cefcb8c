#pragma once
// The write side of RemoteHandle: part buffers filled in any order, complete parts sent in the
// background on the shared pool (S3 multipart in parallel, WebHDFS appends in file order),
// commit or abort at the end.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

namespace kvikio::detail {

/// CRC-32 (the ISO-HDLC polynomial, S3's "CRC32") of `data`.
std::uint32_t crc32(std::span<const char> data) noexcept;
/// `crc` as S3's checksum headers and XML carry it: its big-endian bytes in base64.
std::string s3_crc32_text(std::uint32_t crc);
/// The ETag S3 gives the object that a multipart upload of parts with these (quoted or bare,
/// hex MD5) ETags completes to: the hex MD5 of their binary MD5s, "-", the part count. Empty
/// when a part's ETag is not an MD5 (e.g. SSE-KMS).
std::string s3_multipart_etag(const std::vector<std::string>& part_etags);

/// Covered byte ranges [start, end) of one part, merged on insert.
class IntervalSet {
 public:
  /// Adds [a, b); returns the bytes covered afterwards.
  std::size_t add(std::size_t a, std::size_t b);
  [[nodiscard]] std::size_t covered() const noexcept { return covered_; }
  /// The sub-ranges of [0, len) not covered, in order.
  [[nodiscard]] std::vector<std::pair<std::size_t, std::size_t>> gaps(std::size_t len) const;

 private:
  std::map<std::size_t, std::size_t> ranges_;  // start -> end, disjoint, not adjacent
  std::size_t covered_{0};
};

class RemoteWriter : public std::enable_shared_from_this<RemoteWriter> {
 public:
  enum class Kind { S3_MULTIPART, S3_SINGLE_PUT, WEBHDFS };

  /// `endpoint` must be an S3Endpoint (S3_MULTIPART), an S3EndpointWithPresignedUrl
  /// (S3_SINGLE_PUT) or a WebHdfsEndpoint (WEBHDFS, `append` or not).
  RemoteWriter(std::shared_ptr<RemoteEndpoint> endpoint,
               Kind kind,
               bool append,
               const RemoteWriteOptions& options);
  ~RemoteWriter();
  RemoteWriter(const RemoteWriter&)            = delete;
  RemoteWriter& operator=(const RemoteWriter&) = delete;

  /// Copies [buf, buf + size) (host or device memory) into the parts at `file_offset`; complete
  /// parts are queued. Thread safe.
  void pwrite(const void* buf, std::size_t size, std::size_t file_offset);
  /// Commits; on failure aborts and rethrows. Writes under way in other threads finish first
  /// (and are committed); later writes throw RemoteModeError. A second call does nothing.
  void close();
  /// Waits for parts under way and for writes under way in other threads (which stop at their
  /// next part with RemoteModeError), then undoes what was sent. Never throws; after a
  /// close() it does nothing (waiting for a close() under way first).
  void abort() noexcept;
  /// The declared size, else the end of the furthest write.
  [[nodiscard]] std::size_t extent() const;
  /// Advances the position of sequential writes by `size`; returns the offset to write at.
  std::size_t reserve_sequential(std::size_t size);
  /// Undoes reserve_sequential(size) that returned `at`, if no later one followed.
  void release_sequential(std::size_t at, std::size_t size);
  [[nodiscard]] std::size_t part_size() const noexcept { return part_size_; }

 private:
  struct Part {
    std::unique_ptr<char[]> buf;
    std::size_t len{0};  // the part's length (its buffer's size)
    IntervalSet covered;
    int copiers{0};
    enum class State { filling, queued, sent } state{State::filling};
    std::string etag;
    std::string checksum;  // base64 of its CRC32, once sent
  };

  [[nodiscard]] std::size_t part_len(std::size_t index) const noexcept;
  // With the lock held: the part to copy into, its buffer allocated (waiting for room).
  Part& acquire(std::unique_lock<std::mutex>& lock, std::size_t index);
  // With the lock held: `part` is complete; queue it (S3) or wake the ordered drain (WebHDFS).
  void on_complete(std::unique_lock<std::mutex>& lock, std::size_t index, Part& part);
  void run_or_detach(std::function<void()> job);
  void upload_job(std::size_t index) noexcept;
  void drain_job() noexcept;
  void fail(std::exception_ptr e);  // lock held by the caller
  void throw_if_failed() const;     // lock held by the caller
  [[noreturn]] void throw_mode(const std::string& what) const;
  void ensure_multipart();
  // Sends part `index` with its CRC32 (set into `checksum`); returns its ETag.
  std::string upload_part(std::size_t index, std::span<const char> data, std::string& checksum);
  void webhdfs_send(std::span<const char> data);
  void make_hidden_sibling();
  void webhdfs_rename(std::size_t total);
  // Whether the object now at the URL is the one parts_[0, nparts) make (S3 multipart).
  bool committed_as(std::size_t total, std::size_t nparts);
  void commit(std::size_t total);
  void undo() noexcept;

  std::shared_ptr<RemoteEndpoint> endpoint_;
  Kind kind_;
  bool append_;
  bool overwrite_;
  std::string shown_;  // the redacted URL
  std::size_t part_size_;
  std::optional<std::size_t> declared_;
  std::size_t max_buffered_;
  bool eager_{true};            // complete parts go out before close
  std::size_t base_length_{0};  // WebHDFS append: the file's length when opened

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::size_t, Part> parts_;
  std::size_t buffered_{0};   // parts with a buffer
  std::size_t in_flight_{0};  // background jobs queued or running
  std::size_t extent_{0};
  std::size_t sequential_{0};
  std::exception_ptr error_;
  bool finished_{false};     // closed or aborted
  bool closing_{false};      // close() or abort() began: new writes are refused
  std::size_t writers_{0};   // pwrite calls under way
  std::size_t copying_{0};   // copies into part buffers under way (the sum of Part::copiers)
  std::mutex finish_mutex_;  // held by close() and abort() throughout
  bool draining_{false};
  std::size_t next_send_{0};  // WebHDFS: the next part in file order
  bool created_{false};       // WebHDFS: the hidden file was created
  bool attempted_{false};     // WebHDFS: a data-node request was made (undo() cleans up)
  std::size_t sent_{0};       // WebHDFS: bytes stored by the data-node requests so far
  std::shared_ptr<WebHdfsEndpoint> temp_;  // WebHDFS "w": the hidden sibling written to
  std::string target_path_;                // WebHDFS "w": the target's HDFS path (decoded)

  std::mutex create_mutex_;
  std::string upload_id_;  // S3 multipart, once created
};

}  // namespace kvikio::detail
