// A single-member etcd for the test control plane, embedded from go.etcd.io/etcd/server/v3
// (the same server code the etcd binary runs), listening on loopback only.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dir := flag.String("data-dir", "", "where etcd keeps its data (required)")
	client := flag.String("listen-client-url", "http://127.0.0.1:2379", "client URL (loopback)")
	peer := flag.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL (loopback)")
	flag.Parse()
	if *dir == "" {
		log.Fatal("--data-dir is required")
	}
	cu, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("--listen-client-url: %v", err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("--listen-peer-url: %v", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "spark-triage-test"
	cfg.Dir = *dir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("starting etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd ready on %s", cu)
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		log.Fatal("etcd not ready within 60s")
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-stop:
		log.Printf("etcd stopping on %s", s)
	case err := <-e.Err():
		log.Fatalf("etcd failed: %v", err)
	}
	e.Close()
}
