package workload

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	jobStrategy   = "pkg/registry/batch/job/strategy.go"
	jobController = "pkg/controller/job/job_controller.go"
	indexedUtils  = "pkg/controller/job/indexed_job_utils.go"
	cronUtils     = "pkg/controller/cronjob/utils.go"
	// completionIndexEnv is completionIndexEnvName (indexed_job_utils.go).
	completionIndexEnv = "JOB_COMPLETION_INDEX"
	// The labels without prefix generateSelector also sets
	// (LegacyJobNameLabel, LegacyControllerUidLabel, pkg/apis/batch/types.go).
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

var (
	jobGVK     = batchv1.SchemeGroupVersion.WithKind(KindJob)
	cronJobGVK = batchv1.SchemeGroupVersion.WithKind(KindCronJob)
)

// job: the API server's Job strategy (PrepareForCreate: generateSelector),
// the batch validation, then the job controller's manageJob.
func job(j *batchv1.Job) (*Generated, error) {
	g := &Generated{From: Ref{KindJob, j.Name}, TemplatePath: "spec.template"}
	if err := jobPod(g, j, "spec"); err != nil {
		return nil, err
	}
	return g, nil
}

// jobPod fills g with the first pod of j; spec is j's spec path in the
// object the user wrote (for errors).
func jobPod(g *Generated, j *batchv1.Job, spec string) *FieldError {
	t := &j.Spec.Template
	// ValidateJobSpec (pkg/apis/batch/validation/validation.go).
	switch rp := t.Spec.RestartPolicy; {
	case rp == "" || rp == corev1.RestartPolicyAlways:
		return fieldErr(spec+".template.spec.restartPolicy", "required value: valid values: \"OnFailure\", \"Never\" (a Job's pods may not restart Always, and the API server defaults an unset restartPolicy to Always)")
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		return fieldErr(spec+".template.spec.restartPolicy", "unsupported value %q; expected \"OnFailure\" or \"Never\"", rp)
	case j.Spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		return fieldErr(spec+".template.spec.restartPolicy", "invalid value %q: only \"Never\" is supported when podFailurePolicy is specified", rp)
	}
	if e := checkTemplate(t, spec+".template"); e != nil {
		return e
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"parallelism", j.Spec.Parallelism}, {"completions", j.Spec.Completions}, {"backoffLimit", j.Spec.BackoffLimit}} {
		if f.v != nil && *f.v < 0 {
			return fieldErr(spec+"."+f.name, "invalid value %d: must be greater than or equal to 0", *f.v)
		}
	}
	// SetDefaults_Job (pkg/apis/batch/v1/defaults.go).
	if j.Spec.Completions == nil && j.Spec.Parallelism == nil {
		one := int32(1)
		j.Spec.Completions, j.Spec.Parallelism = &one, &one
	}
	indexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
	if j.Spec.CompletionMode != nil && !indexed && *j.Spec.CompletionMode != batchv1.NonIndexedCompletion {
		return fieldErr(spec+".completionMode", "unsupported value %q; expected \"NonIndexed\" or \"Indexed\"", *j.Spec.CompletionMode)
	}
	if indexed && j.Spec.Completions == nil {
		return fieldErr(spec+".completions", "required value: when completion mode is Indexed")
	}
	manual := j.Spec.ManualSelector != nil && *j.Spec.ManualSelector
	j.UID = uidFor(&j.ObjectMeta, KindJob)
	uid := string(j.UID)
	if manual {
		if e := checkSelected(j.Spec.Selector, t, spec, "job"); e != nil {
			return e
		}
	} else {
		if j.Spec.Selector != nil {
			return fieldErr(spec+".selector", "invalid value: `selector` not auto-generated; expected no selector (the API server generates one), or manualSelector: true")
		}
		// generateSelector (strategy.go): the job-name and controller-uid
		// labels in both forms, unless the template has them.
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		var set []string
		for _, l := range []struct{ k, v string }{
			{legacyJobNameLabel, j.Name}, {batchv1.JobNameLabel, j.Name},
			{legacyControllerUIDLabel, uid}, {batchv1.ControllerUidLabel, uid},
		} {
			if _, ok := t.Labels[l.k]; !ok {
				t.Labels[l.k] = l.v
				set = append(set, l.k+"="+l.v)
			} else if l.v == uid && t.Labels[l.k] != uid {
				return fieldErr(spec+".template.metadata.labels", "invalid value: %s=%q; expected no %s label (the API server sets it to the Job's UID) or manualSelector: true", l.k, t.Labels[l.k], l.k)
			}
		}
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: uid}}
		g.note("generateSelector", jobStrategy, fmt.Sprintf("template labels %s and selector %s=%s (the Job's UID is podstep's, derived from its name; the API server's is random)", joinComma(set), batchv1.ControllerUidLabel, uid))
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		g.note("manageJob", jobController, "spec.suspend is true: the controller creates no pod until the Job is resumed; podstep shows the first it would create")
	} else if p := j.Spec.Parallelism; p != nil && *p == 0 {
		g.note("manageJob", jobController, "spec.parallelism is 0: the controller creates no pod; podstep shows the first it would create")
	}

	// manageJob (job_controller.go): the template copy, the index env
	// (Indexed), the tracking finalizer; per index the annotation, label,
	// hostname and generateName.
	pt := t.DeepCopy()
	prefix := ""
	if indexed {
		for i := range pt.Spec.InitContainers {
			addIndexEnv(&pt.Spec.InitContainers[i])
		}
		for i := range pt.Spec.Containers {
			addIndexEnv(&pt.Spec.Containers[i])
		}
		g.note("addCompletionIndexEnvVariables", indexedUtils, fmt.Sprintf("env %s from fieldRef metadata.labels['%s'] in every container and init container that has no %s", completionIndexEnv, batchv1.JobCompletionIndexAnnotation, completionIndexEnv))
	}
	has := false
	for _, f := range pt.Finalizers {
		has = has || f == batchv1.JobTrackingFinalizer
	}
	if !has {
		pt.Finalizers = append(pt.Finalizers, batchv1.JobTrackingFinalizer)
	}
	g.note("appendJobCompletionFinalizerIfNotFound", jobController, "finalizer "+batchv1.JobTrackingFinalizer)
	if indexed {
		const index = 0
		if pt.Annotations == nil {
			pt.Annotations = map[string]string{}
		}
		pt.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
		pt.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(index)
		pt.Spec.Hostname = fmt.Sprintf("%s-%d", j.Name, index)
		prefix = indexedPrefix(j.Name, index)
		g.note("addCompletionIndexAnnotation, addCompletionIndexLabel", indexedUtils, fmt.Sprintf("completion index %d (the first): annotation and label %s, spec.hostname %s, generateName %q (podGenerateNameWithIndex)", index, batchv1.JobCompletionIndexAnnotation, pt.Spec.Hostname, prefix))
	}
	g.Pod = fromTemplate(g, pt, &j.ObjectMeta, controllerRef(&j.ObjectMeta, jobGVK), prefix)
	return nil
}

// addIndexEnv is addCompletionIndexEnvVariable.
func addIndexEnv(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == completionIndexEnv {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: completionIndexEnv, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation)}}})
}

// indexedPrefix is podGenerateNameWithIndex.
func indexedPrefix(jobName string, index int) string {
	appendIndex := "-" + strconv.Itoa(index) + "-"
	p := jobName + appendIndex
	if len(p) > maxGeneratedNameLength {
		p = p[:maxGeneratedNameLength-len(appendIndex)] + appendIndex
	}
	return p
}

// cronJob: the CronJob validation, the first scheduled time after Now (the
// CronJob taken as created at Now: mostRecentScheduleTime), the Job of
// getJobFromTemplate2, then that Job's pod.
func cronJob(cj *batchv1.CronJob, o Options) (*Generated, error) {
	g := &Generated{From: Ref{KindCronJob, cj.Name}, TemplatePath: "spec.jobTemplate.spec.template"}
	if len(cj.Name) > 52 {
		return nil, fieldErr("metadata.name", "invalid value %q: must be no more than 52 characters (the job name adds 11)", cj.Name)
	}
	if cj.Spec.Schedule == "" {
		return nil, fieldErr("spec.schedule", "required value; expected a cron schedule such as \"*/5 * * * *\"")
	}
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		return nil, fieldErr("spec.schedule", "invalid value %q: cannot use TZ or CRON_TZ in schedule, use timeZone field instead", cj.Spec.Schedule)
	}
	loc := time.UTC
	sched := cj.Spec.Schedule
	if tz := cj.Spec.TimeZone; tz != nil {
		l, err := time.LoadLocation(*tz)
		if err != nil || *tz == "" || strings.EqualFold(*tz, "local") {
			return nil, fieldErr("spec.timeZone", "invalid value %q: unknown time zone; expected an IANA name such as \"Etc/UTC\" or \"Europe/Berlin\"", *tz)
		}
		loc = l
		sched = "TZ=" + *tz + " " + sched // formatSchedule
	}
	s, err := cron.ParseStandard(sched)
	if err != nil {
		return nil, fieldErr("spec.schedule", "invalid value %q: %v; expected a cron schedule such as \"*/5 * * * *\"", cj.Spec.Schedule, err)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	scheduled := s.Next(now)
	if scheduled.IsZero() {
		return nil, fieldErr("spec.schedule", "invalid value %q: the schedule never fires; expected a reachable time", cj.Spec.Schedule)
	}
	cj.UID = uidFor(&cj.ObjectMeta, KindCronJob)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name:            fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60),
		Namespace:       cj.Namespace,
		Labels:          copyMap(cj.Spec.JobTemplate.Labels),
		Annotations:     copyMap(cj.Spec.JobTemplate.Annotations),
		OwnerReferences: []metav1.OwnerReference{controllerRef(&cj.ObjectMeta, cronJobGVK)},
	}}
	j.Annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&j.Spec)
	g.note("getJobFromTemplate2", cronUtils, fmt.Sprintf("Job %s (ownerReference CronJob/%s): the job template; name CRONJOB-<scheduled time in unix minutes> (getJobName, getTimeHashInMinutes) for %s, the first time %q fires after podstep ran (mostRecentScheduleTime for a CronJob created now); annotation %s", j.Name, cj.Name, scheduled.In(loc).Format(time.RFC3339), cj.Spec.Schedule, batchv1.CronJobScheduledTimestampAnnotation))
	if e := jobPod(g, j, "spec.jobTemplate.spec"); e != nil {
		return nil, e
	}
	return g, nil
}
