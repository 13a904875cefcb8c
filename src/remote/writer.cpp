#include "remote/writer.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <random>
#include <string_view>
#include <functional>
#include <iostream>
#include <stdexcept>

#include <kvikio/defaults.hpp>
#include <kvikio/hdfs.hpp>
#include <kvikio/threadpool.hpp>

#include "core/logger.hpp"
#include "device/pointer.hpp"
#include "device/staging.hpp"
#include "remote/transfer.hpp"
#include "remote/url.hpp"

namespace kvikio::detail {

namespace {

constexpr std::size_t mib                = std::size_t{1} << 20;
constexpr std::size_t s3_min_part        = 5 * mib;
constexpr std::size_t s3_max_part        = std::size_t{5} << 30;
constexpr std::size_t s3_max_parts       = 10'000;
constexpr std::size_t single_put_granule = 8 * mib;

std::string range_text(std::size_t a, std::size_t b)
{
  // Built by appending: GCC 12's -Wrestrict misfires on "[" + std::to_string(..).
  std::string s("[");
  s += std::to_string(a);
  s += ", ";
  s += std::to_string(b);
  s += ')';
  return s;
}

// The text between <tag> and </tag> in an S3 XML answer, if any.
std::optional<std::string> xml_field(const std::string& body, const std::string& tag)
{
  auto a = body.find("<" + tag + ">");
  if (a == std::string::npos) { return std::nullopt; }
  a += tag.size() + 2;
  auto b = body.find("</" + tag + ">", a);
  if (b == std::string::npos) { return std::nullopt; }
  return body.substr(a, b - a);
}

std::string with_query(const std::string& url, const std::string& query)
{
  return url + (url.find('?') == std::string::npos ? "?" : "&") + query;
}

// CRC-32 (ISO-HDLC, the one S3 calls CRC32), slicing by 8: about 2 GB/s a core, run on the
// pool thread that sends the part.
struct Crc32Tables {
  std::uint32_t t[8][256]{};
  constexpr Crc32Tables()
  {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) {
        c = (c & 1U) != 0 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      }
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) {
        t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFU];
      }
    }
  }
};
constexpr Crc32Tables crc32_tables{};

}  // namespace

std::uint32_t crc32(std::span<const char> data) noexcept
{
  const auto& t   = crc32_tables.t;
  std::uint32_t c = 0xFFFFFFFFU;
  const auto* p   = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t n   = data.size();
  for (; n >= 8; n -= 8, p += 8) {
    // Byte by byte, so the result does not depend on the host's byte order.
    const std::uint32_t lo = c ^ (std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 |
                                  std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24);
    c = t[7][lo & 0xFFU] ^ t[6][(lo >> 8) & 0xFFU] ^ t[5][(lo >> 16) & 0xFFU] ^ t[4][lo >> 24] ^
        t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; n > 0; --n, ++p) {
    c = t[0][(c ^ *p) & 0xFFU] ^ (c >> 8);
  }
  return c ^ 0xFFFFFFFFU;
}

std::string s3_crc32_text(std::uint32_t crc)
{
  // The big-endian bytes in base64, as S3's x-amz-checksum-crc32 wants them.
  static constexpr char digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::uint64_t v = std::uint64_t{crc} << 16;  // 48 bits: 4 bytes and 2 zero bytes
  std::string out;
  for (int shift = 42; shift >= 12; shift -= 6) {
    out += digits[(v >> shift) & 0x3FU];
  }
  out += "==";
  return out;
}

namespace {

// MD5 (RFC 1321), only to recompute the ETag S3 gives a completed multipart object (the MD5 of
// its parts' MD5s) when a retried CompleteMultipartUpload must be reconciled; not for security.
std::array<unsigned char, 16> md5(std::span<const unsigned char> data)
{
  static constexpr std::uint32_t k[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
  static constexpr int r[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
  std::vector<unsigned char> msg(data.begin(), data.end());
  const std::uint64_t bits = std::uint64_t{data.size()} * 8;
  msg.push_back(0x80);
  while (msg.size() % 64 != 56) {
    msg.push_back(0);
  }
  for (int i = 0; i < 8; ++i) {
    msg.push_back(static_cast<unsigned char>(bits >> (8 * i)));
  }
  std::uint32_t h[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  for (std::size_t off = 0; off < msg.size(); off += 64) {
    std::uint32_t w[16];
    for (int i = 0; i < 16; ++i) {
      const auto* q = &msg[off + 4 * static_cast<std::size_t>(i)];
      w[i]          = std::uint32_t{q[0]} | std::uint32_t{q[1]} << 8 | std::uint32_t{q[2]} << 16 |
             std::uint32_t{q[3]} << 24;
    }
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    for (int i = 0; i < 64; ++i) {
      std::uint32_t f = 0;
      int g           = 0;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) % 16;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) % 16;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) % 16;
      }
      const std::uint32_t t = d;
      d                     = c;
      c                     = b;
      const std::uint32_t x = a + f + k[i] + w[g];
      b += (x << r[i]) | (x >> (32 - r[i]));
      a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
  }
  std::array<unsigned char, 16> out{};
  for (int i = 0; i < 16; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<unsigned char>(h[i / 4] >> (8 * (i % 4)));
  }
  return out;
}

std::string unquoted(std::string s)
{
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') { s = s.substr(1, s.size() - 2); }
  return s;
}

// WebHDFS's {"boolean": false} (RENAME and DELETE report a refusal that way, with status 200).
bool json_boolean_false(const std::string& body)
{
  auto at = body.find("\"boolean\"");
  if (at == std::string::npos) { return false; }
  at = body.find_first_not_of(" \t\r\n:", at + 9);
  return at != std::string::npos && body.compare(at, 5, "false") == 0;
}

}  // namespace

std::string s3_multipart_etag(const std::vector<std::string>& part_etags)
{
  std::vector<unsigned char> digests;
  for (const auto& e : part_etags) {
    const auto hex = unquoted(e);
    if (hex.size() != 32) { return {}; }
    for (std::size_t i = 0; i < 32; i += 2) {
      unsigned v = 0;
      for (std::size_t j = i; j < i + 2; ++j) {
        const char c = hex[j];
        v            = v * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(c))
                                                        ? c - '0'
                                                        : (std::tolower(c) - 'a' + 10));
        if (!std::isxdigit(static_cast<unsigned char>(c))) { return {}; }
      }
      digests.push_back(static_cast<unsigned char>(v));
    }
  }
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (auto byte : md5(digests)) {
    out += digits[byte >> 4];
    out += digits[byte & 0xFU];
  }
  return out + "-" + std::to_string(part_etags.size());
}

// ----------------------------------------------------------------------------- IntervalSet

std::size_t IntervalSet::add(std::size_t a, std::size_t b)
{
  if (a >= b) { return covered_; }
  // Merge with every range that overlaps or touches [a, b).
  auto it = ranges_.upper_bound(a);
  if (it != ranges_.begin() && std::prev(it)->second >= a) { --it; }
  while (it != ranges_.end() && it->first <= b) {
    a = std::min(a, it->first);
    b = std::max(b, it->second);
    covered_ -= it->second - it->first;
    it = ranges_.erase(it);
  }
  ranges_.emplace(a, b);
  covered_ += b - a;
  return covered_;
}

std::vector<std::pair<std::size_t, std::size_t>> IntervalSet::gaps(std::size_t len) const
{
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t pos = 0;
  for (const auto& [a, b] : ranges_) {
    if (a >= len) { break; }
    if (a > pos) { out.emplace_back(pos, a); }
    pos = std::max(pos, b);
  }
  if (pos < len) { out.emplace_back(pos, len); }
  return out;
}

// ----------------------------------------------------------------------------- RemoteWriter

RemoteWriter::RemoteWriter(std::shared_ptr<RemoteEndpoint> endpoint,
                           Kind kind,
                           bool append,
                           const RemoteWriteOptions& options)
  : endpoint_(std::move(endpoint)),
    kind_(kind),
    append_(append),
    overwrite_(options.overwrite),
    shown_(redact_url(endpoint_->url())),
    declared_(options.nbytes)
{
  const std::size_t default_part = std::max(defaults::task_size(), s3_min_part);
  if (options.part_size) {
    part_size_ = *options.part_size;
    if (kind_ == Kind::S3_MULTIPART && (part_size_ < s3_min_part || part_size_ > s3_max_part)) {
      throw std::invalid_argument("RemoteHandle: part_size " + std::to_string(part_size_) +
                                  " for " + shown_ + " is outside S3's limits [5 MiB, 5 GiB] (" +
                                  std::to_string(s3_min_part) + " to " +
                                  std::to_string(s3_max_part) + " bytes)");
    }
    if (part_size_ == 0) {
      throw std::invalid_argument("RemoteHandle: part_size must be > 0 (writing " + shown_ + ")");
    }
  } else if (kind_ == Kind::S3_SINGLE_PUT) {
    part_size_ = single_put_granule;
  } else {
    part_size_ = default_part;
    // A declared size must fit in S3's 10,000 parts: whole MiBs, just large enough.
    if (kind_ == Kind::S3_MULTIPART && declared_ && *declared_ > part_size_ * s3_max_parts) {
      part_size_ = (*declared_ + s3_max_parts * mib - 1) / (s3_max_parts * mib) * mib;
    }
  }
  if (kind_ == Kind::S3_MULTIPART && declared_ && *declared_ > part_size_ * s3_max_parts) {
    throw std::invalid_argument("RemoteHandle: nbytes " + std::to_string(*declared_) + " for " +
                                shown_ + " needs more than S3's 10,000 parts of part_size " +
                                std::to_string(part_size_));
  }
  if (kind_ == Kind::S3_SINGLE_PUT && declared_ && *declared_ > s3_max_part) {
    throw std::invalid_argument("RemoteHandle: nbytes " + std::to_string(*declared_) + " for " +
                                shown_ + " is more than S3's 5 GiB limit of a single PUT");
  }
  max_buffered_ = options.max_buffered_parts.value_or(
    std::max<std::size_t>(8, std::size_t{2} * defaults::num_threads()));
  if (max_buffered_ == 0) {
    throw std::invalid_argument("RemoteHandle: max_buffered_parts must be > 0 (writing " + shown_ +
                                ")");
  }
  // An object known to fit in one part goes as one PutObject at close.
  eager_ = kind_ == Kind::WEBHDFS ||
           (kind_ == Kind::S3_MULTIPART && !(declared_ && *declared_ <= part_size_));
  if (kind_ == Kind::WEBHDFS && append_) { base_length_ = endpoint_->get_file_size(); }
  if (kind_ == Kind::WEBHDFS && !append_) { make_hidden_sibling(); }
}

void RemoteWriter::make_hidden_sibling()
{
  // Commit or nothing on WebHDFS: the bytes go to a hidden file next to the target, which
  // close() renames onto it (HDFS renames are atomic); an abort deletes only that file. The
  // endpoint URL keeps its user.name, doas, delegation and other parameters.
  const std::string url = endpoint_->url();
  const auto query      = url.find('?');
  const auto slash      = url.rfind('/', query);
  const std::string name =
    url.substr(slash + 1, query == std::string::npos ? query : query - slash - 1);
  std::random_device rd;
  std::string tag;
  for (int i = 0; i < 4; ++i) {
    static constexpr char digits[] = "0123456789abcdef";
    for (auto v = rd(), j = 0U; j < 4; ++j, v >>= 4) {
      tag += digits[v & 0xFU];
    }
  }
  const std::string temp_url = url.substr(0, slash + 1) + "." + name + "." + tag +
                               ".kvikio-partial" +
                               (query == std::string::npos ? "" : url.substr(query));
  temp_ = std::make_shared<WebHdfsEndpoint>(temp_url);
  // RENAME's destination is the file's path in HDFS (after /webhdfs/v1), as a query value.
  const auto parts  = split_url(url);
  const auto prefix = std::string_view("/webhdfs/v1");
  target_path_      = percent_decode(parts->path.substr(prefix.size()));
}

RemoteWriter::~RemoteWriter() { abort(); }

std::size_t RemoteWriter::part_len(std::size_t index) const noexcept
{
  if (!declared_) { return part_size_; }
  return std::min(part_size_, *declared_ - index * part_size_);
}

std::size_t RemoteWriter::extent() const
{
  std::lock_guard lock(mutex_);
  return declared_.value_or(extent_);
}

std::size_t RemoteWriter::reserve_sequential(std::size_t size)
{
  std::lock_guard lock(mutex_);
  auto at = sequential_;
  sequential_ += size;
  return at;
}

void RemoteWriter::release_sequential(std::size_t at, std::size_t size)
{
  std::lock_guard lock(mutex_);
  if (sequential_ == at + size) { sequential_ = at; }
}

void RemoteWriter::throw_mode(const std::string& what) const
{
  throw RemoteModeError("kvikio: " + what + " " + shown_ + ": the handle is closed", shown_, 0);
}

void RemoteWriter::throw_if_failed() const
{
  if (error_) { std::rethrow_exception(error_); }
}

void RemoteWriter::fail(std::exception_ptr e)
{
  if (!error_) { error_ = std::move(e); }
  cv_.notify_all();
}

void RemoteWriter::run_or_detach(std::function<void()> job)
{
  // On a pool worker (a write made from a pool task), queueing behind the caller's own task
  // could wait forever for a free worker: run the job here instead.
  if (ThreadPool::is_worker_thread()) {
    job();
  } else {
    defaults::thread_pool().detach_task(std::move(job));
  }
}

RemoteWriter::Part& RemoteWriter::acquire(std::unique_lock<std::mutex>& lock, std::size_t index)
{
  auto it = parts_.find(index);
  if (it != parts_.end()) {
    if (it->second.state != Part::State::filling) {
      const std::size_t a = index * part_size_;
      throw RemoteWriteError("kvikio: write to " + shown_ + ": bytes " +
                               range_text(a, a + it->second.len) + " (part " +
                               std::to_string(index + 1) +
                               ") were already complete and sent; they cannot be written again",
                             shown_,
                             0);
    }
    ++it->second.copiers;
    ++copying_;
    return it->second;
  }
  if (kind_ != Kind::S3_SINGLE_PUT) {
    // Back-pressure: wait for an upload under way to give its buffer back, or for a copy under
    // way in another thread (which may complete a part, and so start an upload). Only when
    // neither can free a buffer is the bound an error.
    cv_.wait(lock, [&] {
      return buffered_ < max_buffered_ || (in_flight_ == 0 && copying_ == 0) || error_ || finished_;
    });
    if (finished_) { throw_mode("write to"); }
    throw_if_failed();
    if (buffered_ >= max_buffered_) {
      throw RemoteWriteError(
        "kvikio: write to " + shown_ + ": " + std::to_string(buffered_) +
          " parts are partly written and none is complete (the bound is max_buffered_parts = " +
          std::to_string(max_buffered_) + " parts of " + std::to_string(part_size_) +
          " bytes); write whole parts, or in file order, or raise max_buffered_parts",
        shown_,
        0);
    }
  }
  Part& p   = parts_[index];
  p.len     = part_len(index);
  p.buf     = std::make_unique_for_overwrite<char[]>(p.len);
  p.copiers = 1;
  ++copying_;
  ++buffered_;
  return p;
}

void RemoteWriter::pwrite(const void* buf, std::size_t size, std::size_t file_offset)
{
  {
    std::lock_guard lock(mutex_);
    if (finished_ || closing_) { throw_mode("write to"); }
    throw_if_failed();
    ++writers_;
  }
  // close() and abort() wait for every write under way before they free the parts it copies
  // into (a write in another thread than close is allowed, e.g. Python's `with` left by an
  // exception while worker threads still write).
  struct Leave {
    RemoteWriter& w;
    explicit Leave(RemoteWriter& writer) : w(writer) {}
    Leave(const Leave&)            = delete;
    Leave& operator=(const Leave&) = delete;
    ~Leave()
    {
      std::lock_guard lock(w.mutex_);
      if (--w.writers_ == 0) { w.cv_.notify_all(); }
    }
  } leave(*this);
  if (size == 0) { return; }
  if (buf == nullptr) {
    throw std::invalid_argument("RemoteHandle::write: null buffer for " + std::to_string(size) +
                                " bytes to " + shown_);
  }
  const std::size_t end = file_offset + size;
  if (end < file_offset || (declared_ && end > *declared_)) {
    throw RemoteWritePastEndError("kvikio: write of " + std::to_string(size) + " bytes at offset " +
                                    std::to_string(file_offset) + " to " + shown_ +
                                    " ends past the declared size (" +
                                    std::to_string(declared_.value_or(0)) + " bytes)",
                                  shown_,
                                  0);
  }
  if (kind_ == Kind::S3_SINGLE_PUT && end > s3_max_part) {
    throw RemoteWritePastEndError("kvikio: write of " + std::to_string(size) + " bytes at offset " +
                                    std::to_string(file_offset) + " to " + shown_ +
                                    " ends past S3's 5 GiB limit of a single PUT (" +
                                    std::to_string(s3_max_part) +
                                    " bytes), which a presigned PUT URL is",
                                  shown_,
                                  0);
  }
  if (kind_ == Kind::S3_MULTIPART && (end - 1) / part_size_ >= s3_max_parts) {
    throw RemoteWritePastEndError(
      "kvikio: write of " + std::to_string(size) + " bytes at offset " +
        std::to_string(file_offset) + " to " + shown_ + " ends past S3's 10,000 parts of " +
        std::to_string(part_size_) + " bytes; open it with a larger part_size",
      shown_,
      0);
  }

  // Bytes of the write at [src, src + n) -> the parts they fall in.
  auto take = [&](const char* src, std::size_t n, std::size_t at) {
    while (n > 0) {
      const std::size_t index = at / part_size_;
      const std::size_t in    = at - index * part_size_;
      std::unique_lock lock(mutex_);
      if (finished_) { throw_mode("write to"); }
      Part& part          = acquire(lock, index);
      const std::size_t k = std::min(n, part.len - in);
      char* dst           = part.buf.get() + in;
      lock.unlock();
      std::memcpy(dst, src, k);  // outside the lock: parts fill in parallel
      lock.lock();
      --part.copiers;
      --copying_;
      cv_.notify_all();  // a writer held back by max_buffered_parts re-checks
      part.covered.add(in, in + k);
      extent_ = std::max(extent_, at + k);
      if (eager_ && part.copiers == 0 && part.covered.covered() == part.len &&
          part.state == Part::State::filling && !finished_) {
        on_complete(lock, index, part);
      }
      src += k;
      at += k;
      n -= k;
    }
  };

  const auto info = get_pointer_info(buf);
  if (info.host_accessible()) {
    take(static_cast<const char*>(buf), size, file_offset);
    return;
  }
  check_device_range(info, buf, size, "write of " + std::to_string(size) + " bytes to " + shown_);
  // The next chunk's device-to-host copy runs while this one is spread into the parts.
  DeviceDrainer drainer(info.context, buf, size, "writing device memory to " + shown_);
  for (auto chunk = drainer.next(); chunk.size > 0; chunk = drainer.next()) {
    take(chunk.data, chunk.size, file_offset + chunk.offset);
  }
}

void RemoteWriter::on_complete(std::unique_lock<std::mutex>& lock, std::size_t index, Part& part)
{
  part.state = Part::State::queued;
  if (kind_ == Kind::WEBHDFS) {
    if (draining_ || index != next_send_) { return; }  // the drain will reach it in order
    draining_ = true;
    ++in_flight_;
    lock.unlock();
    run_or_detach([self = shared_from_this()] { self->drain_job(); });
    lock.lock();
    return;
  }
  ++in_flight_;
  lock.unlock();
  try {
    ensure_multipart();
  } catch (...) {
    lock.lock();
    part.state = Part::State::filling;  // not sent; abort cleans up
    --in_flight_;
    fail(std::current_exception());
    throw;
  }
  run_or_detach([self = shared_from_this(), index] { self->upload_job(index); });
  lock.lock();
}

void RemoteWriter::upload_job(std::size_t index) noexcept
{
  std::unique_lock lock(mutex_);
  Part& part = parts_.at(index);
  if (!error_) {
    std::span<const char> data(part.buf.get(), part.len);
    lock.unlock();
    try {
      std::string checksum;
      auto etag = upload_part(index, data, checksum);
      lock.lock();
      part.etag     = std::move(etag);
      part.checksum = std::move(checksum);
      part.state    = Part::State::sent;
    } catch (...) {
      lock.lock();
      fail(std::current_exception());
    }
  }
  part.buf.reset();
  --buffered_;
  --in_flight_;
  cv_.notify_all();
}

void RemoteWriter::drain_job() noexcept
{
  std::unique_lock lock(mutex_);
  while (true) {
    auto it = parts_.find(next_send_);
    if (error_ || it == parts_.end() || it->second.state != Part::State::queued) { break; }
    Part& part = it->second;
    std::span<const char> data(part.buf.get(), part.len);
    lock.unlock();
    try {
      webhdfs_send(data);
    } catch (...) {
      lock.lock();
      fail(std::current_exception());
      break;
    }
    lock.lock();
    part.state = Part::State::sent;
    part.buf.reset();
    --buffered_;
    ++next_send_;
    cv_.notify_all();
  }
  draining_ = false;
  --in_flight_;
  cv_.notify_all();
}

void RemoteWriter::ensure_multipart()
{
  std::lock_guard guard(create_mutex_);
  if (!upload_id_.empty()) { return; }
  auto r = send_request(
    *endpoint_,
    SendRequest{
      "POST",
      with_query(endpoint_->url(), "uploads="),
      {},
      // Each part carries its CRC32 and S3 checks it, as the AWS SDKs do by default. Without an
      // algorithm S3 (and moto) compute a full-object CRC64NVME of their own at completion.
      {"x-amz-checksum-algorithm: CRC32"},
      "POST (CreateMultipartUpload) of"});
  auto id = xml_field(r.body, "UploadId");
  if (!id || id->empty()) {
    throw RemoteWriteError("kvikio: CreateMultipartUpload of " + shown_ + " (HTTP status " +
                             std::to_string(r.status) + ") gave no UploadId",
                           shown_,
                           r.status);
  }
  upload_id_ = *id;
}

std::string RemoteWriter::upload_part(std::size_t index,
                                      std::span<const char> data,
                                      std::string& checksum)
{
  const std::string number = std::to_string(index + 1);
  checksum                 = s3_crc32_text(crc32(data));
  auto r                   = send_request(
    *endpoint_,
    SendRequest{
      "PUT",
      with_query(endpoint_->url(),
                 "partNumber=" + number + "&uploadId=" + percent_encode(upload_id_, false)),
      {data},
      {"x-amz-checksum-crc32: " + checksum},
      "PUT (UploadPart " + number + ", " + std::to_string(data.size()) + " bytes) of",
      {},
      /*error_in_body=*/true});
  if (r.etag.empty()) {
    throw RemoteWriteError("kvikio: UploadPart " + number + " of " + shown_ + " (HTTP status " +
                             std::to_string(r.status) + ") gave no ETag",
                           shown_,
                           r.status);
  }
  return r.etag;
}

void RemoteWriter::webhdfs_send(std::span<const char> data)
{
  // Mode "w" writes the hidden sibling (created with overwrite: it is ours, so a repeated
  // CREATE is harmless); mode "a" appends to the file itself.
  auto& ep                 = temp_ ? *temp_ : static_cast<WebHdfsEndpoint&>(*endpoint_);
  const bool create        = temp_ && !created_;
  const std::string method = create ? "PUT" : "POST";
  const std::string op     = create ? std::string("op=CREATE&overwrite=true") : "op=APPEND";
  const std::string name   = create ? "CREATE" : "APPEND";
  // The name node answers an empty request with a redirect to the data node that takes the
  // bytes (Hadoop's two-step protocol: the body is sent once, to the data node).
  auto r =
    send_request(ep, SendRequest{method, ep.op_url(op), {}, {}, method + " (" + name + ") of"});
  if (r.location.empty()) {
    throw RemoteWriteError("kvikio: " + name + " of " + shown_ + ": the name node answered HTTP " +
                             std::to_string(r.status) + " without a redirect to a data node",
                           shown_,
                           r.status);
  }
  auto target    = split_url(r.location);
  const bool tls = lower(ep.url().substr(0, 8)) == "https://";
  if (!target || (target->scheme != "https" && (tls || target->scheme != "http"))) {
    throw RemoteWriteError("kvikio: " + name + " of " + shown_ + ": the name node redirected to '" +
                             redact_url(r.location) + "', which is not an " +
                             (tls ? "https" : "http(s)") + " URL",
                           shown_,
                           r.status);
  }
  SendRequest send{
    method,
    r.location,
    {data},
    {},
    method + " (" + name + ", " + std::to_string(data.size()) + " bytes, to the data node) of"};
  if (!create) {
    // An APPEND is not safe to repeat: one that was stored but answered 500 (or too late, or
    // not at all) would land twice. Before a re-send, the file's length says which it was.
    const std::size_t start = (temp_ ? 0 : base_length_) + sent_;
    const std::size_t end   = start + data.size();
    send.took_effect        = [this, &ep, start, end] {
      const std::size_t now = ep.get_file_size();
      if (now == end) { return true; }
      if (now == start) { return false; }
      throw RemoteWriteError("kvikio: APPEND of " + std::to_string(end - start) + " bytes to " +
                               shown_ + " failed, and the file is now " + std::to_string(now) +
                               " bytes long: neither the " + std::to_string(start) +
                               " bytes before the append nor the " + std::to_string(end) +
                               " after it (another writer?); not sent again",
                             shown_,
                             0);
    };
  }
  attempted_ = true;  // from here on, undo() cleans up (the bytes may have reached the file)
  send_request(ep, send);
  created_ = true;
  sent_ += data.size();
}

void RemoteWriter::webhdfs_rename(std::size_t total)
{
  auto& t              = *temp_;
  const std::string op = "op=RENAME&destination=" + percent_encode(target_path_, true) +
                         (overwrite_ ? "&renameoptions=OVERWRITE" : "");
  SendRequest rename{"PUT", t.op_url(op), {}, {}, "PUT (RENAME onto " + shown_ + ") of"};
  // A RENAME whose answer was lost: done when the hidden file is gone and the target has
  // the bytes written.
  rename.took_effect = [&] {
    try {
      (void)t.get_file_size();
      return false;
    } catch (const RemoteHttpError& e) {
      if (e.http_status() != 404) { throw; }
    }
    return endpoint_->get_file_size() == total;
  };
  Response r;
  try {
    r = send_request(t, rename);
  } catch (const RemoteHttpError& e) {
    // libcurl re-sends an empty request by itself when a reused connection dies unanswered:
    // the repeat of a RENAME that was carried out finds no source (404).
    if (e.http_status() != 404 || !rename.took_effect()) { throw; }
    return;
  }
  if (r.answered && json_boolean_false(r.body)) {
    throw RemoteWriteError(
      "kvikio: close of " + shown_ + ": the name node refused to rename the written file onto it" +
        (overwrite_ ? std::string() : std::string(" (it exists, and overwrite is false)")) +
        "; nothing was replaced",
      shown_,
      r.status);
  }
}

void RemoteWriter::commit(std::size_t total)
{
  const std::size_t nparts = (total + part_size_ - 1) / part_size_;
  auto body_of             = [&](std::size_t index) {
    Part& p = parts_.at(index);
    return std::span<const char>(p.buf.get(), std::min(p.len, total - index * part_size_));
  };
  switch (kind_) {
    case Kind::S3_SINGLE_PUT: {
      std::vector<std::span<const char>> body;
      for (std::size_t k = 0; k < nparts; ++k) {
        body.push_back(body_of(k));
      }
      send_request(*endpoint_, SendRequest{"PUT", {}, std::move(body), {}, "PUT of", {}, true});
      return;
    }
    case Kind::S3_MULTIPART: {
      if (upload_id_.empty() && total <= part_size_) {
        std::vector<std::span<const char>> body;
        if (total > 0) { body.push_back(body_of(0)); }
        send_request(*endpoint_,
                     SendRequest{"PUT", {}, std::move(body), {}, "PUT (PutObject) of", {}, true});
        return;
      }
      ensure_multipart();
      std::string xml = "<CompleteMultipartUpload>";
      for (std::size_t k = 0; k < nparts; ++k) {
        Part& p = parts_.at(k);
        if (p.state == Part::State::filling) {
          p.etag  = upload_part(k, body_of(k), p.checksum);
          p.state = Part::State::sent;
          p.buf.reset();
        }
        xml += "<Part><PartNumber>" + std::to_string(k + 1) + "</PartNumber><ETag>" + p.etag +
               "</ETag><ChecksumCRC32>" + p.checksum + "</ChecksumCRC32></Part>";
      }
      xml += "</CompleteMultipartUpload>";
      SendRequest complete{
        "POST",
        with_query(endpoint_->url(), "uploadId=" + percent_encode(upload_id_, false)),
        {std::span<const char>(xml.data(), xml.size())},
        {},
        "POST (CompleteMultipartUpload) of"};
      complete.error_in_body = true;  // S3 may answer 200 and report the failure in the body
      try {
        send_request(*endpoint_, complete);
      } catch (const RemoteHttpError& e) {
        // A Complete that committed but whose answer was lost is answered 404 NoSuchUpload
        // when sent again (MinIO, moto; AWS answers 200). The object is ours when its size
        // and multipart ETag (the MD5 of the parts' MD5s) are those of the parts sent.
        if (e.http_status() != 404 || !committed_as(total, nparts)) { throw; }
        KVIKIO_LOG(warn,
                   "CompleteMultipartUpload of " + shown_ +
                     " answered 404 after a retry; the object is there with the parts' size "
                     "and ETag, so the upload was completed");
      }
      upload_id_.clear();  // completed: nothing to abort any more
      return;
    }
    case Kind::WEBHDFS: {
      for (std::size_t k = next_send_; k < nparts; ++k) {
        webhdfs_send(body_of(k));
        parts_.at(k).state = Part::State::sent;
      }
      if (temp_) {
        if (!created_) { webhdfs_send({}); }  // an empty file
        webhdfs_rename(total);
      }
      attempted_ = false;  // committed: nothing to undo any more
      return;
    }
  }
}

bool RemoteWriter::committed_as(std::size_t total, std::size_t nparts)
{
  std::vector<std::string> etags;
  for (std::size_t k = 0; k < nparts; ++k) {
    etags.push_back(parts_.at(k).etag);
  }
  const auto expected = s3_multipart_etag(etags);
  if (expected.empty()) { return false; }
  try {
    auto r = fetch_meta(*endpoint_, MetaKind::head);
    return r.content_length == static_cast<long long>(total) && unquoted(r.etag) == expected;
  } catch (const RemoteError&) {
    return false;
  }
}

void RemoteWriter::undo() noexcept
{
  try {
    if (kind_ == Kind::S3_MULTIPART) {
      std::lock_guard guard(create_mutex_);
      if (upload_id_.empty()) { return; }
      send_request(
        *endpoint_,
        SendRequest{"DELETE",
                    with_query(endpoint_->url(), "uploadId=" + percent_encode(upload_id_, false)),
                    {},
                    {},
                    "DELETE (AbortMultipartUpload) of"});
      upload_id_.clear();
    } else if (kind_ == Kind::WEBHDFS && attempted_) {
      // Also after a failed first request: its bytes may have reached the file. Truncating an
      // append would also cut bytes another client appended meanwhile (HDFS's lease makes
      // that unlikely: one writer per file).
      if (temp_) {
        send_request(*temp_,
                     SendRequest{"DELETE",
                                 temp_->op_url("op=DELETE"),
                                 {},
                                 {},
                                 "DELETE (of the unfinished hidden file) of"});
      } else {
        auto& ep = static_cast<WebHdfsEndpoint&>(*endpoint_);
        send_request(ep,
                     SendRequest{"POST",
                                 ep.op_url("op=TRUNCATE&newlength=" + std::to_string(base_length_)),
                                 {},
                                 {},
                                 "POST (TRUNCATE, undoing an append) of"});
      }
      attempted_ = false;
    }
  } catch (const std::exception& e) {
    KVIKIO_LOG(error, "aborting the write of " + std::string(shown_) + " failed: " + e.what());
  }
}

void RemoteWriter::abort() noexcept
{
  std::lock_guard finishing(finish_mutex_);  // after a close() under way in another thread
  {
    std::unique_lock lock(mutex_);
    if (finished_) { return; }
    finished_ = true;
    closing_  = true;
    cv_.notify_all();  // writers waiting for room give up
    // Parts under way finish first, so none lands after the abort (S3 would keep it), and
    // writes under way leave the part buffers (their next piece throws RemoteModeError).
    cv_.wait(lock, [&] { return in_flight_ == 0 && writers_ == 0; });
  }
  undo();
  std::lock_guard lock(mutex_);
  parts_.clear();
  buffered_ = 0;
}

void RemoteWriter::close()
{
  std::lock_guard finishing(finish_mutex_);
  std::unique_lock lock(mutex_);
  if (finished_) { return; }
  // Writes that started before close() finish (their bytes are part of the object); later
  // ones throw RemoteModeError.
  closing_ = true;
  cv_.wait(lock, [&] { return in_flight_ == 0 && writers_ == 0; });
  finished_    = true;
  auto give_up = [&](std::exception_ptr e) {
    lock.unlock();
    undo();
    lock.lock();
    parts_.clear();
    buffered_ = 0;
    std::rethrow_exception(e);
  };
  if (error_) { give_up(error_); }
  const std::size_t total = declared_.value_or(extent_);
  std::vector<std::pair<std::size_t, std::size_t>> holes;
  std::size_t hole_bytes = 0;
  for (std::size_t k = 0; k * part_size_ < total; ++k) {
    const std::size_t a   = k * part_size_;
    const std::size_t len = std::min(part_size_, total - a);
    auto it               = parts_.find(k);
    std::vector<std::pair<std::size_t, std::size_t>> gaps;
    if (it == parts_.end()) {
      gaps.emplace_back(0, len);
    } else if (it->second.state == Part::State::filling) {
      gaps = it->second.covered.gaps(len);
    }
    for (auto [x, y] : gaps) {
      // Adjacent gaps of neighbouring parts are one hole.
      if (!holes.empty() && holes.back().second == a + x) {
        holes.back().second = a + y;
      } else {
        holes.emplace_back(a + x, a + y);
      }
      hole_bytes += y - x;
    }
  }
  if (!holes.empty()) {
    std::string list;
    for (std::size_t i = 0; i < holes.size() && i < 3; ++i) {
      if (i > 0) { list += ", "; }
      list += range_text(holes[i].first, holes[i].second);
    }
    if (holes.size() > 3) { list += " and " + std::to_string(holes.size() - 3) + " more"; }
    give_up(std::make_exception_ptr(RemoteIncompleteWriteError(
      "kvikio: close of " + shown_ + ": bytes " + list + " of the " + std::to_string(total) +
        " were never written (" + std::to_string(hole_bytes) +
        " bytes missing); the upload was aborted and no object was written",
      shown_,
      0)));
  }
  lock.unlock();
  try {
    commit(total);
  } catch (...) {
    lock.lock();
    give_up(std::current_exception());
  }
  lock.lock();
  parts_.clear();
  buffered_ = 0;
}

}  // namespace kvikio::detail
