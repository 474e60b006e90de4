package pgcluster

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// netnsSubnet holds every address of a StartCitusNetns cluster: the link
// to worker i is 10.77.(i+1).0/24, the coordinator's end .1, the
// worker's .2. The addresses live only in the namespaces the test makes.
const netnsSubnet = "10.77.0.0/16"

// netns is a cluster's network namespaces: one for the coordinator, one
// per worker, each worker joined to the coordinator's by a veth pair.
type netns struct {
	tb    testing.TB
	tag   string
	core  string
	names []string // every namespace made, for remove
	links []string // the coordinator's end of each worker's link
}

// StartCitusNetns starts a cluster like StartCitus whose coordinator and
// workers each run in a network namespace of their own, the coordinator
// joined to each worker by a veth pair: Cut and Restore then partition
// a worker from the coordinator as a failed link does (packets on an
// established connection go unanswered; a new connection fails). Clients
// reach the nodes through their Unix sockets (DSN), which no namespace
// separates. It needs root and iproute2; where namespaces cannot be
// made the test skips, or fails under SKETCHD_REQUIRE_NETNS=1. The
// namespaces are removed when the test ends.
func StartCitusNetns(tb testing.TB, workers int, conf ...string) *Cluster {
	tb.Helper()
	n := &netns{tb: tb, tag: fmt.Sprintf("%04x", rand.IntN(1<<16))}
	tb.Cleanup(n.remove) // runs after the cluster's cleanup stops the nodes
	n.core = n.add("c")
	c := newCluster(tb, conf)
	c.net = n
	// The coordinator's own address is on its loopback, up whichever
	// link is cut; each worker reaches it through its link.
	n.ip("-n", n.core, "addr", "add", "10.77.0.1/32", "dev", "lo")
	for i := range workers {
		w := n.add(fmt.Sprintf("w%d", i))
		link, peer := fmt.Sprintf("sk%s%s%d", n.tag, "c", i), fmt.Sprintf("sk%s%s%d", n.tag, "w", i)
		n.ip("link", "add", link, "type", "veth", "peer", "name", peer)
		n.ip("link", "set", link, "netns", n.core)
		n.ip("link", "set", peer, "netns", w)
		n.ip("-n", n.core, "addr", "add", fmt.Sprintf("10.77.%d.1/24", i+1), "dev", link)
		n.ip("-n", n.core, "link", "set", link, "up")
		n.ip("-n", w, "addr", "add", fmt.Sprintf("10.77.%d.2/24", i+1), "dev", peer)
		n.ip("-n", w, "link", "set", peer, "up")
		n.ip("-n", w, "route", "add", "default", "via", fmt.Sprintf("10.77.%d.1", i+1))
		n.links = append(n.links, link)
	}
	at := []nodeAt{{n.core, "10.77.0.1"}}
	for i := range workers {
		at = append(at, nodeAt{n.names[i+1], fmt.Sprintf("10.77.%d.2", i+1)})
	}
	nodes := c.newNodes(at...)
	c.Coordinator, c.Workers = nodes[0], nodes[1:]
	c.register()
	return c
}

// add makes a namespace with its loopback up and returns its name.
func (n *netns) add(suffix string) string {
	n.tb.Helper()
	name := "sketchd-" + n.tag + "-" + suffix
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		why := fmt.Sprintf("cannot make a network namespace (ip netns add: %v: %s); the partition tests need root and iproute2", err, strings.TrimSpace(string(out)))
		if os.Getenv("SKETCHD_REQUIRE_NETNS") == "1" {
			n.tb.Fatalf("SKETCHD_REQUIRE_NETNS=1 but %s", why)
		}
		n.tb.Skip("skipping: " + why)
	}
	n.names = append(n.names, name)
	n.ip("-n", name, "link", "set", "lo", "up")
	return name
}

func (n *netns) ip(args ...string) {
	n.tb.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.tb.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// remove deletes the namespaces, and with them their links.
func (n *netns) remove() {
	for _, name := range n.names {
		exec.Command("ip", "netns", "del", name).Run()
	}
}

// Cut takes down the link between the coordinator and worker i: the
// coordinator's connections to it go unanswered, and new ones fail.
func (c *Cluster) Cut(i int) { c.setLink(i, "down") }

// Restore brings the link between the coordinator and worker i back.
func (c *Cluster) Restore(i int) { c.setLink(i, "up") }

func (c *Cluster) setLink(i int, state string) {
	c.tb.Helper()
	if c.net == nil {
		c.tb.Fatal("Cut and Restore need a cluster from StartCitusNetns")
	}
	c.net.ip("-n", c.net.core, "link", "set", c.net.links[i], state)
}
