// Tests of the SHA-256 wrapper over OpenSSL against FIPS 180-4 / NIST example vectors, of
// incremental hashing across arbitrary chunk boundaries, and of its error on misuse.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "manifest_builder.h"
#include "taot/codegen/sha256.h"

namespace taot::codegen {
namespace {

// The hex digest, or the error's message (which no expected digest equals), so a failure shows why.
std::string hex_or_error(Expected<std::string> hex) {
  return hex.ok() ? *std::move(hex) : "error: " + hex.status().message();
}
std::string hex_or_error(Expected<Sha256::Digest> digest) {
  return digest.ok() ? to_hex(*digest) : "error: " + digest.status().message();
}

TEST(Sha256, MatchesNistVectors) {
  EXPECT_EQ(hex_or_error(sha256_hex("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex_or_error(sha256_hex("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex_or_error(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex_or_error(sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                       "mnopqrstnopqrstu")),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, MillionAsInUnevenChunks) {
  Sha256 hash;
  const std::string chunk(997, 'a');
  std::size_t left = 1000000;
  while (left > 0) {
    const std::size_t take = std::min(left, chunk.size());
    hash.update(std::string_view(chunk).substr(0, take));
    left -= take;
  }
  EXPECT_EQ(hex_or_error(hash.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, ChunkingDoesNotChangeTheDigest) {
  std::mt19937 random(7);
  for (std::size_t size : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 119u, 120u, 128u, 1000u}) {
    std::string bytes(size, '\0');
    for (char& c : bytes) c = static_cast<char>(random() & 0xff);
    const std::string whole = hex_or_error(sha256_hex(bytes));
    Sha256 pieces;
    std::size_t at = 0;
    while (at < bytes.size()) {
      const std::size_t take = std::min<std::size_t>(bytes.size() - at, random() % 70);
      pieces.update(std::string_view(bytes).substr(at, take));
      at += take;
    }
    EXPECT_EQ(hex_or_error(pieces.finish()), whole) << "size " << size;
  }
}

TEST(Sha256, UseAfterFinishIsAnErrorNotAWrongDigest) {
  Sha256 hash;
  hash.update("abc");
  EXPECT_EQ(hex_or_error(hash.finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  hash.update("abc");
  const Expected<Sha256::Digest> again = hash.finish();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), TAOT_INTERNAL);
  EXPECT_NE(again.status().message().find("after finish()"), std::string::npos) << again.status().message();

  Sha256 moved_from;
  Sha256 moved_to = std::move(moved_from);
  moved_to.update("abc");
  EXPECT_EQ(hex_or_error(moved_to.finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_FALSE(moved_from.finish().ok());  // NOLINT(bugprone-use-after-move): the misuse under test
}

TEST(Sha256, HashesFilesAndNamesMissingOnes) {
  testing::TempDir dir;
  testing::write_file(dir.path() / "f.bin", "abc");
  const Expected<FileContent> content = read_file_with_sha256(dir.path() / "f.bin");
  ASSERT_TRUE(content.ok()) << content.status().message();
  EXPECT_EQ(content->bytes, "abc");
  EXPECT_EQ(content->sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const Expected<FileContent> missing = read_file_with_sha256(dir.path() / "none.bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none.bin: file not found"), std::string::npos);
}

}  // namespace
}  // namespace taot::codegen
