#include "collectives/backends/tcp/etcd_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "collectives/api/collective_error.h"
#include "gtest/gtest.h"

namespace ringlet::collectives::tcp {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A socket listening on a free loopback port; close() it to free the port.
int ListenOnFreePort(int* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (fd < 0 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 1) != 0) {
    ADD_FAILURE() << "no free loopback port";
    return -1;
  }
  socklen_t size = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  *port = ntohs(address.sin_port);
  return fd;
}

int FreePort() {
  int port = 0;
  const int fd = ListenOnFreePort(&port);
  if (fd >= 0) ::close(fd);
  return port;
}

// One etcd server for the whole suite, on ports of its own, with its data
// in the test's scratch folder.
class EtcdStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::access("/usr/bin/etcd", X_OK) != 0) {
      skip_reason_ =
          "/usr/bin/etcd is not installed (Debian's etcd-server; ./bazelw "
          "installs it)";
      return;
    }
    const char* tmp = std::getenv("TEST_TMPDIR");
    const std::string dir = std::string(tmp ? tmp : "/tmp") + "/etcd";
    const int client_port = FreePort();
    int peer_port = FreePort();
    while (peer_port == client_port) peer_port = FreePort();
    endpoint_ = "etcd://127.0.0.1:" + std::to_string(client_port);
    const std::string client =
        "http://127.0.0.1:" + std::to_string(client_port);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port);
    const std::vector<std::string> args = {
        "/usr/bin/etcd",
        "--data-dir=" + dir,
        "--listen-client-urls=" + client,
        "--advertise-client-urls=" + client,
        "--listen-peer-urls=" + peer,
        "--initial-advertise-peer-urls=" + peer,
        "--initial-cluster=default=" + peer,
    };
    const std::string log = dir + ".log";
    etcd_ = ::fork();
    if (etcd_ == 0) {
      const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out >= 0) {
        ::dup2(out, STDOUT_FILENO);
        ::dup2(out, STDERR_FILENO);
      }
      std::vector<char*> argv;
      for (const std::string& arg : args) {
        argv.push_back(const_cast<char*>(arg.c_str()));
      }
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    // Ready once it answers a read.
    EtcdStore store(endpoint_, milliseconds(500));
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      if (::waitpid(etcd_, nullptr, WNOHANG) == etcd_) {
        etcd_ = 0;
        FAIL() << "etcd exited at its start; see " << log;
      }
      try {
        store.Get("/ready");
        return;
      } catch (const CollectiveError&) {
        std::this_thread::sleep_for(milliseconds(50));
      }
    }
    FAIL() << "etcd did not answer at " << endpoint_ << " within 20 s; see "
           << log;
  }
  static void TearDownTestSuite() {
    if (etcd_ > 0) {
      ::kill(etcd_, SIGKILL);
      ::waitpid(etcd_, nullptr, 0);
      etcd_ = 0;
    }
  }
  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_GT(etcd_, 0);
  }

  // Keys of one test, apart from the others'.
  std::string Key(const std::string& what) const {
    return std::string("/") +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
           "/" + what;
  }

  static inline pid_t etcd_ = 0;
  static inline std::string endpoint_;
  static inline std::string skip_reason_;
};

TEST_F(EtcdStoreTest, PutThenGetReturnsTheBytesAndAbsentKeysAreEmpty) {
  EtcdStore store(endpoint_);
  EXPECT_EQ(store.name(), "etcd at http://" + endpoint_.substr(7));
  EXPECT_FALSE(store.Get(Key("never")).has_value());
  // Bytes base64 must carry: a space, a newline, a zero byte, high bytes,
  // and each length modulo 3.
  for (const std::string& value :
       {std::string("127.0.0.1 29500"), std::string("a"), std::string("ab"),
        std::string("x\n\0\xff\xfe", 5), std::string()}) {
    store.Put(Key("value"), value);
    const std::optional<std::string> got = store.Get(Key("value"));
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, value);
  }
}

TEST_F(EtcdStoreTest, PutIfAbsentKeepsTheFirstValue) {
  EtcdStore store(endpoint_);
  EXPECT_EQ(store.PutIfAbsent(Key("host"), "0 4000"), "0 4000");
  EXPECT_EQ(store.PutIfAbsent(Key("host"), "1 5000"), "0 4000");
  EXPECT_EQ(store.Get(Key("host")).value_or(""), "0 4000");
}

TEST_F(EtcdStoreTest, OfRacingPutIfAbsentsExactlyOneWinsAndAllAgree) {
  constexpr int kRacers = 8;
  std::vector<std::string> answers(kRacers);
  std::vector<std::thread> racers;
  for (int i = 0; i < kRacers; ++i) {
    racers.emplace_back([&, i] {
      EtcdStore store(endpoint_);
      answers[i] = store.PutIfAbsent(Key("host"), "racer " + std::to_string(i));
    });
  }
  for (std::thread& racer : racers) racer.join();
  const std::set<std::string> distinct(answers.begin(), answers.end());
  ASSERT_EQ(distinct.size(), 1u);
  const std::string winner = *distinct.begin();
  EXPECT_EQ(winner.rfind("racer ", 0), 0u) << winner;
}

TEST_F(EtcdStoreTest, ListReturnsExactlyTheKeysUnderThePrefix) {
  EtcdStore store(endpoint_);
  store.Put(Key("alive/1"), "one");
  store.Put(Key("alive/3"), "three");
  store.Put(Key("alive0"), "not under alive/");
  store.Put(Key("alivf"), "not under alive/");
  const std::map<std::string, std::string> found = store.List(Key("alive/"));
  const std::map<std::string, std::string> expected = {
      {Key("alive/1"), "one"}, {Key("alive/3"), "three"}};
  EXPECT_EQ(found, expected);
  EXPECT_TRUE(store.List(Key("nothing/")).empty());
}

TEST_F(EtcdStoreTest, AStoreNobodyListensAtIsAnErrorThatNamesIt) {
  EtcdStore store("etcd://127.0.0.1:" + std::to_string(FreePort()),
                  milliseconds(1000));
  try {
    store.Get("/x");
    FAIL() << "reached a store nobody listens at";
  } catch (const CollectiveError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("cannot reach etcd at http://127.0.0.1:"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("RINGLET_RENDEZVOUS_STORE"), std::string::npos) << what;
  }
}

TEST_F(EtcdStoreTest, AStoreThatNeverAnswersIsAnErrorWithinItsTimeout) {
  // Accepts the connection (the kernel does) and never answers.
  int port = 0;
  const int silent = ListenOnFreePort(&port);
  ASSERT_GE(silent, 0);
  EtcdStore store("etcd://127.0.0.1:" + std::to_string(port),
                  milliseconds(300));
  const auto start = Clock::now();
  EXPECT_THROW(store.Put("/x", "y"), CollectiveError);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  ::close(silent);
}

TEST(EtcdStoreSettingTest, EndpointsOtherThanHostAndPortAreRefused) {
  for (const char* endpoint :
       {"etcd://", "etcd://host", "etcd://:2379", "etcd://host:",
        "etcd://h:12x", "etcd://h:2379/v3", "host:2379", "https://h:2379"}) {
    EXPECT_THROW(EtcdStore{endpoint}, std::invalid_argument) << endpoint;
  }
  EXPECT_EQ(EtcdStore("etcd://h:2379/").name(), "etcd at http://h:2379");
  EXPECT_EQ(EtcdStore("http://10.0.0.2:2379").name(),
            "etcd at http://10.0.0.2:2379");
}

TEST(EtcdStoreSettingTest, TheSettingNamesEtcdOrNothing) {
  EXPECT_EQ(StoreFromSetting(""), nullptr);
  const std::shared_ptr<RendezvousStore> store =
      StoreFromSetting("etcd://127.0.0.1:2379");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->name(), "etcd at http://127.0.0.1:2379");
  try {
    StoreFromSetting("redis://127.0.0.1:6379");
    FAIL() << "took a redis endpoint";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("etcd://host:port"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace ringlet::collectives::tcp
