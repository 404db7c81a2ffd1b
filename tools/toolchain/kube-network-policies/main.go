// kube-network-policies' agent for the local cluster's real nodes: upstream's cmd/main.go (v0.8.0)
// for plain NetworkPolicy, run as a host process instead of a DaemonSet pod. What differs, and why:
//   - --kubeconfig: it runs on the host with a client certificate of its own, not in-cluster;
//   - --nftables-table-name: the real nodes share the host's network namespace, so each node's
//     agent owns a table of its own (upstream's Config has the field; its main does not set it);
//   - SIGTERM as well as SIGINT ends it the way that removes its table: the local cluster, like a
//     kubelet ending a pod, stops its processes with SIGTERM;
//   - it exits as soon as its controller has removed its table, not after a fixed 5 s, and exits 1
//     when the controller stops by itself (an nfqueue another program holds, a table the kernel
//     refused), so nothing runs on that silently enforces nothing;
//   - no AdminNetworkPolicy flags (the local cluster installs no such API), and no --disable-nri:
//     upstream's main never passed it on, and v0.8.0's controller with NRI disabled dereferences
//     its absent NRI plugin for a pod IP it does not know; with it enabled and no NRI socket (the
//     real nodes' containerd 1.6 has none) it logs once and reads pod IPs from the API server.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

// How long the controller may take to remove its table once told to stop.
const cleanupTimeout = 5 * time.Second

var (
	failOpen            bool
	queueID             int
	metricsBindAddress  string
	hostnameOverride    string
	netfilterBug1766Fix bool
	kubeconfig          string
	tableName           string
)

func init() {
	flag.BoolVar(&failOpen, "fail-open", false, "If set, don't drop packets if the controller is not running")
	flag.IntVar(&queueID, "nfqueue-id", 100, "Number of the nfqueue used")
	flag.StringVar(&metricsBindAddress, "metrics-bind-address", ":9080", "The IP address and port for the metrics server to serve on")
	flag.StringVar(&hostnameOverride, "hostname-override", "", "The name of the Node this agent enforces policies for (default: the host name)")
	flag.BoolVar(&netfilterBug1766Fix, "netfilter-bug-1766-fix", true, "If set, process DNS packets on the PREROUTING hooks to avoid the race condition on the conntrack subsystem, not needed for kernels 6.12+ (see https://bugzilla.netfilter.org/show_bug.cgi?id=1766)")
	flag.StringVar(&kubeconfig, "kubeconfig", "", "The kubeconfig file of the agent's identity")
	flag.StringVar(&tableName, "nftables-table-name", "kube-network-policies", "The inet nftables table this agent owns (one per agent in a network namespace)")
	flag.Usage = func() {
		fmt.Fprint(os.Stderr, "Usage: kube-network-policies --kubeconfig FILE [options]\n\n")
		flag.PrintDefaults()
	}
}

func main() { os.Exit(run()) }

func run() int {
	c := logsapi.NewLoggingConfiguration()
	logsapi.AddGoFlags(c, flag.CommandLine)
	flag.Parse()
	logs.InitLogs()
	if err := logsapi.ValidateAndApply(c, nil); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	if kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "--kubeconfig is required")
		return 2
	}
	if _, _, err := net.SplitHostPort(metricsBindAddress); err != nil {
		fmt.Fprintf(os.Stderr, "--metrics-bind-address %q: %v\n", metricsBindAddress, err)
		return 2
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer cancel()
	logger := klog.FromContext(ctx)
	flag.VisitAll(func(f *flag.Flag) { logger.Info("flag", "name", f.Name, "value", f.Value) })

	nodeName, err := nodeutil.GetHostname(hostnameOverride)
	if err != nil {
		logger.Error(err, "the node's name")
		return 1
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		logger.Error(err, "reading the kubeconfig", "file", kubeconfig)
		return 1
	}
	// As upstream: protobuf for the built-in kinds.
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	config.ContentType = "application/vnd.kubernetes.protobuf"
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		logger.Error(err, "the API client")
		return 1
	}
	informersFactory := informers.NewSharedInformerFactory(clientset, 0)

	http.Handle("/metrics", promhttp.Handler())
	go func() {
		if err := http.ListenAndServe(metricsBindAddress, nil); err != nil {
			logger.Error(err, "metrics server", "address", metricsBindAddress)
		}
	}()

	controller, err := networkpolicy.NewController(
		clientset,
		informersFactory.Networking().V1().NetworkPolicies(),
		informersFactory.Core().V1().Namespaces(),
		informersFactory.Core().V1().Pods(),
		nil, nil, nil, nil, // no AdminNetworkPolicy or BaselineAdminNetworkPolicy
		networkpolicy.Config{
			FailOpen:            failOpen,
			QueueID:             queueID,
			NodeName:            nodeName,
			NetfilterBug1766Fix: netfilterBug1766Fix,
			NFTableName:         tableName,
		},
	)
	if err != nil {
		logger.Error(err, "creating the network policy controller")
		return 1
	}
	// Run returns once ctx ends (or it failed), after its deferred removal of the table.
	stopped := make(chan error, 1)
	go func() { stopped <- controller.Run(ctx) }()
	informersFactory.Start(ctx.Done())

	select {
	case err := <-stopped:
		if ctx.Err() == nil {
			logger.Error(err, "the network policy controller stopped by itself")
			return 1
		}
		logger.Info("stopped; table removed", "table", tableName)
		return 0
	case <-ctx.Done():
	}
	select {
	case <-stopped:
		logger.Info("stopped; table removed", "table", tableName)
		return 0
	case <-time.After(cleanupTimeout):
		logger.Info("the controller did not stop in time; its table may be left", "table", tableName)
		return 1
	}
}
