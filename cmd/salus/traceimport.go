package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/cluster/nodelist"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload/traceimport"
	"github.com/spf13/cobra"
)

func newTraceImportCmd() *cobra.Command {
	var (
		format, out, outFormat string
		since, until           string
		deviceName             string
		clusterFile            string
		lengths                map[string]string
		o                      traceimport.Options
	)
	var examples []string
	var formats []string
	for _, f := range traceimport.Formats() {
		formats = append(formats, fmt.Sprintf("  %-12s %s", f.Name, f.Summary))
		examples = append(examples, "  "+f.Example)
	}
	cmd := &cobra.Command{
		Use:   "import --format FORMAT FILE [FILE]",
		Short: "Convert a public GPU-cluster trace (--format " + strings.Join(traceimport.Names(), ", ") + ") into a trace",
		Long: `Convert a public GPU-cluster trace into this project's trace (CSV, or JSON Lines),
sorted by arrival, which salus trace validate accepts and salus simulate runs.

Each kept job becomes a training job of one catalog profile: the one --model and
--batch name, else the source's model when the catalog has it (Tiresias), else
the profile whose peak memory is the largest that fits the job's GPU request (its
share of a GPU x the device's usable memory). Its iterations are its duration
(less the profile's start-up) over the profile's iteration time on the device;
arrival_s is its submission relative to the first kept job's; gpus is the GPUs
it held at once. The device is --device, else the preset of the job's GPU type
where the source names one (V100M16: the 16 GB V100; A100, T4, ...), else the
P100; a type no preset matches is taken at the P100's figures with a warning.
--memory request writes the job's own memory (persistent_mib, ephemeral_mib)
scaled to its GPU request; simulate such a trace on a device with as much memory.

Rows that are not GPU jobs that ran (no GPU, never started) are dropped and
counted, by reason, on standard error; so are jobs still running when the trace
was cut (--censored keep runs them to the cut), jobs shorter than their
profile's start-up (--short keep makes them one iteration) and jobs wider than
--max-gpus. A GPU share (Alibaba's gpu_milli, PAI's plan_gpu) is the job's
compute demand (demand) as well as its memory request; Alibaba's QoS classes
are priorities (LS 0, Guaranteed 1, Burstable 2, BE 3). Sia's and Pollux's rows
have no length: --length gives each application's, in seconds. A malformed row
is an error that names the file, line and field, unless --skip-bad (then it is
counted).
docs/traces.md, "Public traces", maps every format field by field.

Formats:
` + strings.Join(formats, "\n"),
		Example: strings.Join(examples, "\n"),
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format == "" {
				return fmt.Errorf("give the source's format with --format: %s", strings.Join(traceimport.Names(), ", "))
			}
			f, err := traceimport.Lookup(format)
			if err != nil {
				return fmt.Errorf("--format: %w", err)
			}
			if len(args) > f.MaxFiles {
				return fmt.Errorf("--format %s reads %s: got %d files", f.Name, f.Args, len(args))
			}
			if deviceName != "" {
				d, err := device.Preset(deviceName)
				if err != nil {
					return fmt.Errorf("--device: %w", err)
				}
				g := importGPU(d)
				o.Device = &g
			}
			o.GPUFor = importGPUFor
			if clusterFile != "" {
				c, err := cluster.Load(clusterFile)
				if err != nil {
					return fmt.Errorf("--cluster: %w", err)
				}
				o.GPUFor, o.GPUModels = nodelist.GPUFor(c, importGPUFor), true
			}
			for app, v := range lengths {
				l, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return fmt.Errorf("--length %s=%s: give the application's length in seconds", app, v)
				}
				if o.Lengths == nil {
					o.Lengths = map[string]float64{}
				}
				o.Lengths[strings.ToLower(strings.TrimSpace(app))] = l
			}
			if o.Batch != 0 && o.Model == "" {
				return fmt.Errorf("--batch %d needs --model: the two name one catalog profile", o.Batch)
			}
			for _, w := range []struct {
				flag, v string
				dst     **float64
			}{{"since", since, &o.Since}, {"until", until, &o.Until}} {
				if w.v == "" {
					continue
				}
				t, err := traceimport.ParseTime(w.v)
				if err != nil {
					return fmt.Errorf("--%s: %v (the source's own clock: seconds as the file writes them, or a date for the traces that write dates)", w.flag, err)
				}
				*w.dst = &t
			}
			o.Output = outFormat
			if o.Output == "" {
				o.Output = "csv"
				if ext := strings.ToLower(filepath.Ext(out)); ext == ".jsonl" || ext == ".json" || ext == ".ndjson" {
					o.Output = "jsonl"
				}
			}
			if err := checkFormat(o.Output, "csv", "jsonl"); err != nil {
				return fmt.Errorf("--output-format: %w", err)
			}
			w, done, err := importOutput(cmd, out)
			if err != nil {
				return err
			}
			stats, err := traceimport.Convert(f, args, o, w)
			if cerr := done(err == nil); err == nil {
				err = cerr
			}
			if err == nil || errors.Is(err, traceimport.ErrNoJobs) {
				stats.Summary(cmd.ErrOrStderr())
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "", "the source trace's format: "+strings.Join(traceimport.Names(), ", "))
	addOutFlag(fl, &out, "", "write the trace to this file instead of standard output (.jsonl: JSON Lines)")
	fl.StringVar(&outFormat, "output-format", "", "the trace's format: csv or jsonl (default: from --out's extension, else csv)")
	fl.StringVar(&deviceName, "device", "", "device preset the GPU requests are shares of and the durations were run on: "+strings.Join(device.Names(), ", ")+" (default: the job's GPU type when the source names one, else p100)")
	fl.StringVar(&o.Model, "model", "", "give every job this catalog model (with --batch) instead of matching a profile to its GPU request")
	fl.IntVar(&o.Batch, "batch", 0, "batch size of --model's profile")
	fl.StringVar(&o.Memory, "memory", traceimport.MemoryProfile, "job memory: profile (the matched profile's) or request (the profile's scaled to the job's GPU request, written inline)")
	fl.StringVar(&since, "since", "", "keep jobs submitted at or after this time, on the source's clock (seconds, or a date like '2017-10-03 00:00:00')")
	fl.StringVar(&until, "until", "", "keep jobs submitted before this time, on the source's clock")
	fl.IntVar(&o.Limit, "limit", 0, "keep the first N jobs by arrival (0: all)")
	fl.StringSliceVar(&o.Statuses, "status", nil, "keep only jobs whose final status is one of these, comma-separated (e.g. Terminated, COMPLETED, Pass; default: every job that ran)")
	fl.StringSliceVar(&o.QoS, "qos", nil, "keep only jobs of these QoS classes, comma-separated (alibaba2023: LS, Guaranteed, Burstable, BE; default: all)")
	fl.IntVar(&o.MaxGPUs, "max-gpus", 0, "drop (and count) jobs on more GPUs than this, the largest node's (0: no limit)")
	fl.StringVar(&o.Censored, "censored", traceimport.Drop, "jobs still running when the trace was cut: drop (counted), or keep (run until the cut)")
	fl.StringVar(&o.Short, "short", traceimport.Drop, "jobs that ran for less than their profile's start-up: drop (counted), or keep (one iteration, longer than they ran)")
	fl.StringToStringVar(&lengths, "length", nil, "seconds a job of each application runs, for sources whose rows have no length (sia): APP=SECONDS,...")
	fl.BoolVar(&o.SkipBad, "skip-bad", false, "count malformed rows and go on instead of failing on the first")
	fl.StringVar(&clusterFile, "cluster", "", "the trace's own cluster file (salus trace cluster): its models time the jobs of their GPU type, and each job's constraint is written as gpu_models, timed_on reference for a job without one (--gpu-models)")
	fl.BoolVar(&o.GPUModels, "gpu-models", false, "write each job's GPU-type constraint (Alibaba 2023's gpu_spec) as gpu_models, and timed_on reference for a job without one (it runs its recorded time on any node), for a run on the trace's own cluster (salus trace cluster)")
	return cmd
}

// importGPUFor is the device of a source's GPU type: the preset device.Match
// finds ("V100M16": the 16 GB V100, "T4": the T4), the P100 the catalog was
// measured on where the source names none, and where no preset matches, the
// P100's figures under the type's name at speed 1, with device.Detect's warning.
func importGPUFor(gpuType string) (traceimport.GPU, error) {
	if gpuType == "" {
		return importGPU(device.DefaultDevice()), nil
	}
	d, err := device.Detect(gpuType, 0)
	return importGPU(d), err
}

func importGPU(d device.Device) traceimport.GPU {
	return traceimport.GPU{Name: d.Name, CapacityMiB: d.CapacityMiB, Speed: d.Speed}
}

// importOutput opens where the trace goes: standard output, or --out through a
// temporary file renamed into place only when the import succeeds (a file, so
// that a sorted source is written as it is read).
func importOutput(cmd *cobra.Command, out string) (io.Writer, func(ok bool) error, error) {
	if out == "" || out == "-" {
		return cmd.OutOrStdout(), func(bool) error { return nil }, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return nil, nil, fmt.Errorf("--out %s: %w", out, err)
	}
	return tmp, func(ok bool) error {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
			return nil
		}
		err := tmp.Close()
		if err == nil {
			err = os.Chmod(tmp.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(tmp.Name(), out)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("--out %s: %w", out, err)
		}
		return nil
	}, nil
}
