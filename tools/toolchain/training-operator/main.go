// Kubeflow's training operator for the local cluster: its TFJob reconciler and TFJob admission webhook,
// exactly as the operator's own main registers them, under a main of our own.
//
// Why not the operator's main: it always runs its certificate rotator, which writes certificates for an
// in-cluster Service (training-operator.kubeflow.svc) into a fixed /tmp folder and serves the webhook on
// every interface. Here, as JobSet's and Kueue's controllers do on the local cluster, the webhook listens
// on 127.0.0.1 with a certificate from the cluster's CA (--cert-dir), and the webhook configuration calls
// it by URL (tools/localcluster/training_operator.py). Only the TFJob scheme runs, with no gang scheduler.
package main

import (
	"flag"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	controllerv1 "github.com/kubeflow/training-operator/pkg/controller.v1"
	"github.com/kubeflow/training-operator/pkg/controller.v1/common"
	"github.com/kubeflow/training-operator/pkg/webhooks"
)

func main() {
	var metricsAddr, certDir string
	var webhookPort, controllerThreads int
	flag.StringVar(&metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "The address the metric endpoint binds to.")
	flag.IntVar(&webhookPort, "webhook-server-port", 9443, "The TFJob webhook's port on 127.0.0.1.")
	flag.StringVar(&certDir, "cert-dir", "", "The folder holding the webhook's tls.crt and tls.key.")
	flag.IntVar(&controllerThreads, "controller-threads", 1, "Number of worker threads used by the controller.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setupLog := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: webhookPort, CertDir: certDir}),
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		setupLog.Error(err, "unable to start manager")
		os.Exit(1)
	}
	kind := kubeflowv1.TFJobKind
	if err := controllerv1.SupportedSchemeReconciler[kind](mgr, common.GenNonGangSchedulerSetupFunc(), controllerThreads); err != nil {
		setupLog.Error(err, "unable to create controller", "scheme", kind)
		os.Exit(1)
	}
	if err := webhooks.SupportedSchemeWebhook[kind](mgr); err != nil {
		setupLog.Error(err, "unable to start webhook server", "scheme", kind)
		os.Exit(1)
	}
	setupLog.Info("starting manager", "scheme", kind)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "problem running manager")
		os.Exit(1)
	}
}
