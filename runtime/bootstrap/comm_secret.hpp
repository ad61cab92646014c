// The job's key under MSCCLPP_COMM_SECRET (or _FILE): every connection
// to the bootstrap root and between ranks proves it by challenge-response
// (core/net/hello.hpp). The threat model is in docs/runtime.md, "Security".
#ifndef MSCCLPP_BOOTSTRAP_COMM_SECRET_HPP_
#define MSCCLPP_BOOTSTRAP_COMM_SECRET_HPP_

#include <optional>
#include <string>

#include "core/net/secret.hpp"
#include "core/net/sha256.hpp"

namespace mscclpp::bootstrap {

// The fewest bytes a secret may have: shorter ones could be
// guessed offline from one recorded handshake.
constexpr size_t kMinCommSecretBytes = 16;

// The configured secret, or none. Throws InvalidArgument when both
// variables are set, the file cannot be read, or the secret is short.
std::optional<std::string> configuredCommSecret();

// HMAC-SHA256(secret, "mscclpp job key" + the unique id's secret):
// one key per job, so a recorded handshake of one job proves nothing
// to another that shares the secret. None without a secret.
std::optional<net::Digest> jobKey(const net::Secret& idSecret);

}  // namespace mscclpp::bootstrap

#endif  // MSCCLPP_BOOTSTRAP_COMM_SECRET_HPP_
