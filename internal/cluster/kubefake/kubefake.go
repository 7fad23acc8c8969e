// Package kubefake adapts client-go's fake clientset to kube.API for unit
// tests: each call is the action the fake's typed client records for it
// (get, list, create, create on a subresource, delete, watch), so the
// fake's object tracker, its reactors (PrependReactor) and its Actions()
// behave as they did with the typed clientset. Tests only: it links the
// fake clientset and with it every API group.
package kubefake

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/podstep/podstep/internal/cluster/kube"
)

// Invoker is what the adapter needs of a fake clientset
// (*fake.Clientset has it through its embedded testing.Fake).
type Invoker interface {
	Invokes(action clienttesting.Action, defaultReturnObj runtime.Object) (runtime.Object, error)
	InvokesWatch(action clienttesting.Action) (watch.Interface, error)
}

// New is kube.API over a fake clientset.
func New(f Invoker) kube.API { return &api{f: f} }

type api struct{ f Invoker }

// into copies got (the fake's answer) into into, of the same type.
func copyInto(got, into runtime.Object) error {
	if got == nil {
		return nil
	}
	gv, iv := reflect.ValueOf(got), reflect.ValueOf(into)
	if gv.Type() != iv.Type() {
		return fmt.Errorf("kubefake: the fake answered a %T, want a %T", got, into)
	}
	iv.Elem().Set(gv.Elem())
	return nil
}

func (a *api) Get(_ context.Context, r kube.Resource, ns, name string, into runtime.Object) error {
	var act clienttesting.Action
	if ns == "" {
		act = clienttesting.NewRootGetActionWithOptions(r.GVR(), name, metav1.GetOptions{})
	} else {
		act = clienttesting.NewGetActionWithOptions(r.GVR(), ns, name, metav1.GetOptions{})
	}
	got, err := a.f.Invokes(act, into.DeepCopyObject())
	if err != nil {
		return err
	}
	return copyInto(got, into)
}

func (a *api) List(_ context.Context, r kube.Resource, ns string, opts metav1.ListOptions, into runtime.Object) error {
	var act clienttesting.Action
	if ns == "" {
		act = clienttesting.NewRootListActionWithOptions(r.GVR(), r.GVK(), opts)
	} else {
		act = clienttesting.NewListActionWithOptions(r.GVR(), r.GVK(), ns, opts)
	}
	got, err := a.f.Invokes(act, into.DeepCopyObject())
	if err != nil {
		return err
	}
	if err := copyInto(got, into); err != nil {
		return err
	}
	// The fake typed clients filter by label themselves; so does this.
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil || sel.Empty() {
		return err
	}
	items, err := meta.ExtractList(into)
	if err != nil {
		return err
	}
	var kept []runtime.Object
	for _, it := range items {
		if m, err := meta.Accessor(it); err == nil && sel.Matches(labels.Set(m.GetLabels())) {
			kept = append(kept, it)
		}
	}
	return meta.SetList(into, kept)
}

func (a *api) Create(_ context.Context, r kube.Resource, ns, name, subresource string, obj, into runtime.Object) error {
	var act clienttesting.Action
	switch {
	case subresource != "":
		act = clienttesting.NewCreateSubresourceAction(r.GVR(), name, subresource, ns, obj)
	case ns == "":
		act = clienttesting.NewRootCreateActionWithOptions(r.GVR(), obj, metav1.CreateOptions{})
	default:
		act = clienttesting.NewCreateActionWithOptions(r.GVR(), ns, obj, metav1.CreateOptions{})
	}
	got, err := a.f.Invokes(act, into.DeepCopyObject())
	if err != nil {
		return err
	}
	return copyInto(got, into)
}

func (a *api) Delete(_ context.Context, r kube.Resource, ns, name string, opts metav1.DeleteOptions) error {
	var act clienttesting.Action
	if ns == "" {
		act = clienttesting.NewRootDeleteActionWithOptions(r.GVR(), name, opts)
	} else {
		act = clienttesting.NewDeleteActionWithOptions(r.GVR(), ns, name, opts)
	}
	_, err := a.f.Invokes(act, nil)
	return err
}

func (a *api) Watch(_ context.Context, r kube.Resource, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	if ns == "" {
		return a.f.InvokesWatch(clienttesting.NewRootWatchActionWithOptions(r.GVR(), opts))
	}
	return a.f.InvokesWatch(clienttesting.NewWatchActionWithOptions(r.GVR(), ns, opts))
}

// Logs answers "fake logs", as the fake clientset's GetLogs does.
func (a *api) Logs(_ context.Context, ns, name string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	act := clienttesting.GenericActionImpl{ActionImpl: clienttesting.ActionImpl{
		Namespace: ns, Verb: "get", Resource: kube.Pods.GVR(), Subresource: "log",
	}, Value: opts}
	if _, err := a.f.Invokes(act, &corev1.Pod{}); err != nil {
		return nil, err
	}
	return io.NopCloser(strings.NewReader("fake logs")), nil
}

// Raw is not served by the fake clientset (its RESTClient is nil).
func (a *api) Raw(_ context.Context, path ...string) ([]byte, error) {
	return nil, fmt.Errorf("kubefake: no raw requests (%s)", strings.Join(path, "/"))
}
