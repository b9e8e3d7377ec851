// A small xDS server for the tests, built on go-control-plane the way Envoy Gateway's rate-limit runner
// builds its own: a SotW snapshot cache (NewSnapshotCache(false, IDHash{})), the ADS service only, and one
// snapshot of RateLimitConfig resources for one node id. The snapshot comes from a JSON file that the test
// rewrites ({"version": "1", "resources": [RateLimitConfig as proto JSON, ...]}); the file is re-read when it
// changes. What happens on the streams is written to stdout as JSON lines, for the test to wait on.
//
//	xds-server -addr 127.0.0.1:PORT -node NODE_ID -config FILE [-cert F -key F -ca F]
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/protojson"
)

var out sync.Mutex

// emit writes one event line to stdout.
func emit(fields map[string]any) {
	line, _ := json.Marshal(fields)
	out.Lock()
	defer out.Unlock()
	fmt.Println(string(line))
}

type snapshotFile struct {
	Version   string            `json:"version"`
	Resources []json.RawMessage `json:"resources"`
}

// load reads the file and sets the snapshot; an unreadable or invalid file is reported and leaves the snapshot as it was.
func load(ctx context.Context, cache cachev3.SnapshotCache, node, path string) {
	text, err := os.ReadFile(path)
	if err != nil {
		emit(map[string]any{"event": "config_error", "error": err.Error()})
		return
	}
	var f snapshotFile
	if err := json.Unmarshal(text, &f); err != nil {
		emit(map[string]any{"event": "config_error", "error": err.Error()})
		return
	}
	resources := make([]types.Resource, 0, len(f.Resources))
	for i, raw := range f.Resources {
		r := &rlsconf.RateLimitConfig{}
		if err := protojson.Unmarshal(raw, r); err != nil {
			emit(map[string]any{"event": "config_error", "error": fmt.Sprintf("resources[%d]: %s", i, err)})
			return
		}
		resources = append(resources, r)
	}
	snap, err := cachev3.NewSnapshot(f.Version, map[resourcev3.Type][]types.Resource{resourcev3.RateLimitConfigType: resources})
	if err == nil {
		err = cache.SetSnapshot(ctx, node, snap)
	}
	if err != nil {
		emit(map[string]any{"event": "config_error", "error": err.Error()})
		return
	}
	emit(map[string]any{"event": "snapshot", "version": f.Version, "resources": len(resources)})
}

func watch(ctx context.Context, cache cachev3.SnapshotCache, node, path string) {
	var last []byte
	for {
		text, err := os.ReadFile(path)
		if err == nil && !bytes.Equal(text, last) {
			last = text
			load(ctx, cache, node, path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func serverTLS(cert, key, ca string) credentials.TransportCredentials {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		fail(err)
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		fail(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fail(fmt.Errorf("no certificate in %s", ca))
	}
	// As Envoy Gateway serves its xDS: client certificates are required and must chain to the CA.
	return credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "xds-server:", err)
	os.Exit(1)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18001", "listen address")
	node := flag.String("node", "envoy-ratelimit", "node id the snapshot is set for")
	config := flag.String("config", "", "snapshot file (JSON)")
	cert := flag.String("cert", "", "server certificate (TLS with client certificates required)")
	key := flag.String("key", "", "server key")
	ca := flag.String("ca", "", "CA that client certificates must chain to")
	flag.Parse()
	if *config == "" {
		fail(fmt.Errorf("-config is required"))
	}

	ctx := context.Background()
	cache := cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil)
	callbacks := serverv3.CallbackFuncs{
		StreamOpenFunc: func(_ context.Context, id int64, typeURL string) error {
			emit(map[string]any{"event": "stream_open", "stream": id})
			return nil
		},
		StreamClosedFunc: func(id int64, _ *core.Node) {
			emit(map[string]any{"event": "stream_closed", "stream": id})
		},
		StreamRequestFunc: func(id int64, req *discovery.DiscoveryRequest) error {
			ev := map[string]any{"event": "request", "stream": id, "version": req.GetVersionInfo(), "nonce": req.GetResponseNonce(), "type": req.GetTypeUrl()}
			if n := req.GetNode(); n != nil {
				ev["node"] = n.GetId()
				if md := n.GetMetadata(); md != nil {
					ev["metadata"] = md.AsMap()
				}
			}
			if e := req.GetErrorDetail(); e != nil {
				ev["event"] = "nack"
				ev["error"] = e.GetMessage()
			}
			emit(ev)
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
			emit(map[string]any{"event": "response", "stream": id, "version": resp.GetVersionInfo(), "nonce": resp.GetNonce(), "resources": len(resp.GetResources())})
		},
	}
	xds := serverv3.NewServer(ctx, cache, callbacks)

	var opts []grpc.ServerOption
	if *cert != "" {
		opts = append(opts, grpc.Creds(serverTLS(*cert, *key, *ca)))
	}
	srv := grpc.NewServer(opts...)
	discovery.RegisterAggregatedDiscoveryServiceServer(srv, xds)
	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		fail(err)
	}
	go watch(ctx, cache, *node, *config)
	emit(map[string]any{"event": "listening", "addr": lis.Addr().String()})
	if err := srv.Serve(lis); err != nil {
		fail(err)
	}
}
