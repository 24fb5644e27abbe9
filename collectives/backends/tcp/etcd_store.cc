#include "collectives/backends/tcp/etcd_store.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <cstring>
#include <mutex>
#include <stdexcept>

#include "collectives/api/collective_error.h"
#include "nlohmann/json.hpp"

namespace ringlet::collectives::tcp {
namespace {

// etcd's JSON carries keys and values as base64.
std::string Base64(const std::string& bytes) {
  std::string text(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()),
                      reinterpret_cast<const unsigned char*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  text.resize(n);
  return text;
}

std::string FromBase64(const std::string& text, const std::string& what) {
  if (text.size() % 4 != 0) {
    throw CollectiveError("etcd sent " + what + " that is not base64");
  }
  std::string bytes(text.size() / 4 * 3 + 1, '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(bytes.data()),
                      reinterpret_cast<const unsigned char*>(text.data()),
                      static_cast<int>(text.size()));
  if (n < 0) throw CollectiveError("etcd sent " + what + " that is not base64");
  size_t padding = 0;
  while (padding < 2 && padding < text.size() &&
         text[text.size() - 1 - padding] == '=') {
    ++padding;
  }
  bytes.resize(static_cast<size_t>(n) - padding);
  return bytes;
}

// The first key after every key that starts with `prefix`: etcd's
// range_end for a prefix.
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      ++prefix.back();
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // Every key.
}

size_t Append(char* data, size_t size, size_t count, void* to) {
  static_cast<std::string*>(to)->append(data, size * count);
  return size * count;
}

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

nlohmann::json Parse(const std::string& text, const std::string& store) {
  nlohmann::json reply = nlohmann::json::parse(text, nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) {
    throw CollectiveError(store +
                          " answered with something that is not "
                          "etcd's JSON: is RINGLET_RENDEZVOUS_STORE the "
                          "client URL of an etcd v3 server?");
  }
  if (reply.contains("error") || reply.contains("code")) {
    throw CollectiveError(store + " refused the request: " +
                          reply.value("message", reply.dump()));
  }
  return reply;
}

std::string ValueOf(const nlohmann::json& kv) {
  return FromBase64(kv.value("value", ""), "a value");
}

}  // namespace

EtcdStore::EtcdStore(const std::string& endpoint,
                     std::chrono::milliseconds timeout)
    : timeout_(timeout) {
  std::string rest;
  for (const char* scheme : {"etcd://", "http://"}) {
    if (endpoint.rfind(scheme, 0) == 0) rest = endpoint.substr(strlen(scheme));
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (rest.empty() || colon == std::string::npos || colon == 0 ||
      colon + 1 == rest.size() ||
      rest.find_first_not_of("0123456789", colon + 1) != std::string::npos ||
      rest.find('/') != std::string::npos) {
    throw std::invalid_argument(
        "RINGLET_RENDEZVOUS_STORE='" + endpoint +
        "' is not an etcd endpoint: give etcd://host:port, e.g. "
        "etcd://127.0.0.1:2379 (etcd's --advertise-client-urls)");
  }
  url_ = "http://" + rest;
  InitCurlOnce();
}

std::string EtcdStore::Call(const std::string& path,
                            const std::string& body) const {
  CURL* curl = curl_easy_init();
  if (curl == nullptr)
    throw CollectiveError("libcurl could not start a request");
  std::string reply;
  const std::string url = url_ + path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                   static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(timeout_.count()));
  // No signals: the calls come from several threads.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  const CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK) {
    throw CollectiveError("cannot reach " + name() + ": " +
                          curl_easy_strerror(code) +
                          " (is etcd running there? RINGLET_RENDEZVOUS_STORE "
                          "names it)");
  }
  if (status != 200) {
    // etcd's errors come as JSON with a message.
    Parse(reply, name());
    throw CollectiveError(name() + " answered HTTP " + std::to_string(status) +
                          " to " + path);
  }
  return reply;
}

std::optional<std::string> EtcdStore::Get(const std::string& key) {
  const nlohmann::json reply =
      Parse(Call("/v3/kv/range", nlohmann::json{{"key", Base64(key)}}.dump()),
            name());
  if (!reply.contains("kvs") || reply["kvs"].empty()) return std::nullopt;
  return ValueOf(reply["kvs"][0]);
}

void EtcdStore::Put(const std::string& key, const std::string& value) {
  Parse(Call("/v3/kv/put",
             nlohmann::json{{"key", Base64(key)}, {"value", Base64(value)}}
                 .dump()),
        name());
}

std::string EtcdStore::PutIfAbsent(const std::string& key,
                                   const std::string& value) {
  const std::string k = Base64(key);
  // One transaction: put if the key was never created, else read it.
  const nlohmann::json request = {
      {"compare",
       {{{"key", k}, {"target", "CREATE"}, {"create_revision", "0"}}}},
      {"success", {{{"request_put", {{"key", k}, {"value", Base64(value)}}}}}},
      {"failure", {{{"request_range", {{"key", k}}}}}},
  };
  const nlohmann::json reply =
      Parse(Call("/v3/kv/txn", request.dump()), name());
  if (reply.value("succeeded", false)) return value;
  const nlohmann::json& responses = reply.value("responses", nlohmann::json());
  if (!responses.is_array() || responses.empty() ||
      !responses[0].contains("response_range") ||
      !responses[0]["response_range"].contains("kvs") ||
      responses[0]["response_range"]["kvs"].empty()) {
    // Created and deleted between the compare and the read: not ours.
    throw CollectiveError(name() + " neither set nor returned " + key);
  }
  return ValueOf(responses[0]["response_range"]["kvs"][0]);
}

std::map<std::string, std::string> EtcdStore::List(const std::string& prefix) {
  const nlohmann::json reply =
      Parse(Call("/v3/kv/range",
                 nlohmann::json{{"key", Base64(prefix)},
                                {"range_end", Base64(PrefixEnd(prefix))}}
                     .dump()),
            name());
  std::map<std::string, std::string> found;
  if (!reply.contains("kvs")) return found;
  for (const nlohmann::json& kv : reply["kvs"]) {
    found[FromBase64(kv.value("key", ""), "a key")] = ValueOf(kv);
  }
  return found;
}

std::shared_ptr<RendezvousStore> StoreFromSetting(const std::string& setting) {
  if (setting.empty()) return nullptr;
  if (setting.rfind("etcd://", 0) != 0 && setting.rfind("http://", 0) != 0) {
    throw std::invalid_argument(
        "RINGLET_RENDEZVOUS_STORE='" + setting +
        "' names no store ringlet knows: give etcd://host:port");
  }
  return std::make_shared<EtcdStore>(setting);
}

}  // namespace ringlet::collectives::tcp
