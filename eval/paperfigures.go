package eval

// PaperFigure is one published figure of the paper's evaluation (Yu and
// Chowdhury, "Salus: Fine-Grained GPU Sharing Primitives for Deep Learning
// Applications", MLSys 2020, camera-ready PDF): values read from its text and
// tables, and from the PDF's vector drawings where a figure prints no number.
// Value is as published: one number, or several joined by "/" (Fig. 10's
// latencies under Salus, TensorFlow and MPS) or "+" (Fig. 9's jobs).
type PaperFigure struct {
	Experiment string `json:"experiment"`
	Figure     string `json:"figure"`
	Row        string `json:"row"`
	Column     string `json:"column"`
	Value      string `json:"value"`
	Unit       string `json:"unit"`
}

// Key names a figure: "Table 1/FIFO/makespan".
func (f PaperFigure) Key() string { return f.Figure + "/" + f.Row + "/" + f.Column }

// PaperFigures are every figure of the paper's evaluation, in its order; the paper
// suite puts this project's value beside each one.
var PaperFigures = []PaperFigure{
	{"training", "Table 1", "FIFO", "makespan", "303.4", "min"},
	{"training", "Table 1", "FIFO", "avg_queuing", "167.6", "min"},
	{"training", "Table 1", "FIFO", "avg_jct", "170.6", "min"},
	{"training", "Table 1", "FIFO", "p95_jct", "251.1", "min"},
	{"training", "Table 1", "SRTF", "makespan", "306.0", "min"},
	{"training", "Table 1", "SRTF", "avg_queuing", "28.6", "min"},
	{"training", "Table 1", "SRTF", "avg_jct", "53.4", "min"},
	{"training", "Table 1", "SRTF", "p95_jct", "217.0", "min"},
	{"training", "Table 1", "PACK", "makespan", "287.4", "min"},
	{"training", "Table 1", "PACK", "avg_queuing", "129.9", "min"},
	{"training", "Table 1", "PACK", "avg_jct", "145.5", "min"},
	{"training", "Table 1", "PACK", "p95_jct", "266.1", "min"},
	{"training", "Table 1", "FAIR", "makespan", "301.6", "min"},
	{"training", "Table 1", "FAIR", "avg_queuing", "58.5", "min"},
	{"training", "Table 1", "FAIR", "avg_jct", "96.6", "min"},
	{"training", "Table 1", "FAIR", "p95_jct", "281.2", "min"},
	{"tuning", "Fig. 11", "superres_128 x300", "makespan_salus", "201.5", "min"},
	{"tuning", "Fig. 11", "superres_128 x300", "makespan_tf_fifo", "480.1", "min"},
	{"tuning", "Fig. 11", "resnet50_50 x300", "makespan_salus", "572.6", "min"},
	{"tuning", "Fig. 11", "resnet50_50 x300", "makespan_tf_fifo", "612.9", "min"},
	{"inference", "Fig. 10", "42 jobs", "gpus_tf", "42", "GPUs"},
	{"inference", "Fig. 10", "42 jobs", "gpus_mps", "6", "GPUs"},
	{"inference", "Fig. 10", "42 jobs", "gpus_salus", "1", "GPUs"},
	{"inference", "Fig. 10", "alexnet", "latency_salus_tf_mps", "5.3/3.0/4.0", "ms"},
	{"inference", "Fig. 10", "googlenet", "latency_salus_tf_mps", "16.7/9.0/11.0", "ms"},
	{"inference", "Fig. 10", "inception3", "latency_salus_tf_mps", "33.7/20.0/22.0", "ms"},
	{"inference", "Fig. 10", "inception4", "latency_salus_tf_mps", "53.3/35.0/37.0", "ms"},
	{"inference", "Fig. 10", "overfeat", "latency_salus_tf_mps", "7.3/5.0/6.0", "ms"},
	{"inference", "Fig. 10", "resnet101", "latency_salus_tf_mps", "37.0/19.0/21.0", "ms"},
	{"inference", "Fig. 10", "resnet152", "latency_salus_tf_mps", "53.3/26.0/29.0", "ms"},
	{"inference", "Fig. 10", "resnet50", "latency_salus_tf_mps", "22.0/11.0/13.0", "ms"},
	{"inference", "Fig. 10", "seq2seq", "latency_salus_tf_mps", "6.7/3.0/4.0", "ms"},
	{"inference", "Fig. 10", "superres", "latency_salus_tf_mps", "8.0/4.0/4.0", "ms"},
	{"inference", "Fig. 10", "vae", "latency_salus_tf_mps", "5.0/3.0/3.0", "ms"},
	{"inference", "Fig. 10", "vgg11", "latency_salus_tf_mps", "7.7/6.0/6.0", "ms"},
	{"inference", "Fig. 10", "vgg16", "latency_salus_tf_mps", "10.3/8.0/8.0", "ms"},
	{"inference", "Fig. 10", "vgg19", "latency_salus_tf_mps", "12.0/9.0/9.0", "ms"},
	{"overhead", "Fig. 12", "alexnet", "iteration_time_ratio", "1.042", "x"},
	{"overhead", "Fig. 12", "googlenet", "iteration_time_ratio", "1.021", "x"},
	{"overhead", "Fig. 12", "inception3", "iteration_time_ratio", "1.006", "x"},
	{"overhead", "Fig. 12", "inception4", "iteration_time_ratio", "1.015", "x"},
	{"overhead", "Fig. 12", "overfeat", "iteration_time_ratio", "1.019", "x"},
	{"overhead", "Fig. 12", "resnet101", "iteration_time_ratio", "1.014", "x"},
	{"overhead", "Fig. 12", "resnet152", "iteration_time_ratio", "1.013", "x"},
	{"overhead", "Fig. 12", "resnet50", "iteration_time_ratio", "1.012", "x"},
	{"overhead", "Fig. 12", "seq2seq", "iteration_time_ratio", "1.077", "x"},
	{"overhead", "Fig. 12", "speech", "iteration_time_ratio", "1.014", "x"},
	{"overhead", "Fig. 12", "vgg11", "iteration_time_ratio", "1.003", "x"},
	{"overhead", "Fig. 12", "vgg16", "iteration_time_ratio", "1.006", "x"},
	{"overhead", "Fig. 12", "vgg19", "iteration_time_ratio", "1.004", "x"},
	{"overhead", "Fig. 12", "superres", "iteration_time_ratio", "1.83", "x"},
	{"overhead", "Fig. 12", "vae", "iteration_time_ratio", "1.81", "x"},
	{"sharing", "Fig. 13", "2 x alexnet_25 (1 min each)", "avg_jct_static_partition", "105.2", "s"},
	{"sharing", "Fig. 13", "2 x alexnet_25 (1 min each)", "avg_jct_static_partition_mps", "88.5", "s"},
	{"sharing", "Fig. 13", "2 x alexnet_25 (1 min each)", "avg_jct_static_partition_mps_overcommit", "698.45", "s"},
	{"sharing", "Fig. 13", "2 x alexnet_25 (1 min each)", "avg_jct_salus", "89.1", "s"},
	{"fairness", "Fig. 9", "inception3_50", "images_per_s_alone", "129", "images/s"},
	{"fairness", "Fig. 9", "inception3_50", "images_per_s_two", "64.4+64.7", "images/s"},
	{"fairness", "Fig. 9", "inception3_50", "images_per_s_three", "47.8+46.0+45.5", "images/s"},
}
