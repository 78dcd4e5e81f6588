"""Pinned versions of every real component. Bumping one is a one-line change here."""

# Kafka line -> exact Maven release. 3.9 is the last line with ZooKeeper mode;
# 4.x is KRaft only and has KIP-848 (group.protocol=consumer) GA.
KAFKA_RELEASES = {
    "3.9": "3.9.2",
    "4.1": "4.1.1",
}
KAFKA_LINES_WITH_ZOOKEEPER = {"3.9"}
SCALA_BINARY = "2.13"

# Kafka 3.9 logs through reload4j (log4j 1 API); 4.x through log4j2. Neither brings an
# SLF4J binding with it, so we add one or the GroupCoordinator lines never reach a file.
SLF4J_BINDINGS = {
    "3.9": [("org.slf4j", "slf4j-reload4j", "1.7.36")],
    "4.1": [("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")],
}

# Kafka's command-line tools, same release as the broker line: the java driver runs
# their VerifiableConsumer. 3.9's tools bring reload4j and its binding; 4.x's bring
# log4j2 without one, so the tools get SLF4J_BINDINGS too.
KAFKA_TOOLS_ARTIFACT = ("org.apache.kafka", "kafka-tools")

# Jolokia's JVM agent serves JMX as JSON over HTTP. It runs inside every ZooKeeper
# server so the harness can call ZooKeeper's per-connection MBean operation
# terminateSession(): the one way to expire a broker's session on the server
# without knowing its session password. (groupId, artifactId, version, classifier)
JOLOKIA_AGENT = ("org.jolokia", "jolokia-agent-jvm", "2.6.0", "javaagent")

TOXIPROXY_VERSION = "v2.12.0"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"

JAVA_MIN_MAJOR = 17
GO_MIN = (1, 23)

# The compose backend (setup --compose): Debian's Docker Engine when no engine answers, and
# debootstrap for the images' base (no registry is reachable: images are built here).
CONTAINER_DEBS = {
    "docker.io": "20.10.24+dfsg1-1+deb12u1+b6",
    "debootstrap": "1.0.128+nmu2+deb12u2",
}
IMAGE_SUITE = "bookworm"  # the images' Debian release
IMAGE_MIRROR = "http://deb.debian.org/debian"
IMAGE_PACKAGES = ("openjdk-17-jre-headless", "python3")  # the JVMs and the project's coordinator
