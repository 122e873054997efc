package workload

type measuredRun struct {
	class string // duration class: 1min, 5min, 10min
	jctS  float64
	iters int
}

type measuredProfile struct {
	model   string
	batch   int
	peakMiB float64
	runs    [3]measuredRun
}

// cnnFigures are the usual published figures for the ImageNet CNNs: parameters in
// millions (as collected in shared/reference/model-parameters.csv) and forward-pass
// multiply-accumulates per sample, in billions, at the benchmark's input size (224x224,
// 299x299 for the Inception nets). MACs come from the models' papers and the common
// model-zoo tables; they only serve to estimate the times of models Salus did not time.
var cnnFigures = map[string]struct{ paramsM, gmacs float64 }{
	"alexnet":    {61.0, 0.72},
	"overfeat":   {145.9, 2.8},
	"vgg11":      {132.9, 7.6},
	"vgg16":      {138.4, 15.5},
	"vgg19":      {143.7, 19.6},
	"googlenet":  {6.8, 1.5},
	"inception3": {23.8, 5.7},
	"inception4": {42.7, 12.3},
	"resnet50":   {25.6, 4.1},
	"resnet101":  {44.5, 7.8},
	"resnet152":  {60.2, 11.5},
}

// declaredMemory is what Salus's own test workloads declared to the server (MiB),
// transcribed from shared/reference/salus-memory-declarations.csv. gmacs is this
// project's estimate of forward multiply-accumulates per sample (per sequence for the
// language model), from each network's layer shapes as noted; Salus published no
// times for these models, so their iteration times are estimated from it.
type declared struct {
	model      string
	kind       string // train or infer
	batch      int
	ephemeral  float64
	persistent float64
	gmacs      float64
	gmacsNote  string
}

var declaredWorkloads = []declared{
	// MNIST VAE, fully connected 784-500-500-(2x20) encoder and 20-500-500-784 decoder:
	// about 1.3 M multiply-accumulates per image.
	{"vae", "train", 64, 10, 21, 0.0013, vaeNote},
	{"vae", "train", 128, 10, 22, 0.0013, vaeNote},
	{"vae", "train", 256, 20, 23, 0.0013, vaeNote},
	{"vae", "infer", 1, 5, 21, 0.0013, vaeNote},
	// Sub-pixel CNN super-resolution (5x5x64, 3x3x64x32, 3x3x32x9 convolutions) on
	// 75x75 inputs: about 127 M multiply-accumulates per image.
	{"superres", "train", 32, 252.79, 17.50, 0.127, superresNote},
	{"superres", "train", 64, 500, 31.69, 0.127, superresNote},
	{"superres", "train", 128, 992.98, 60.44, 0.127, superresNote},
	{"superres", "infer", 1, 137, 1, 0.127, superresNote},
	// PTB word language model (TensorFlow tutorial configs, batch 20): 2 LSTM layers of
	// 200/650/1500 units over 20/35/35 steps plus a 10k-word softmax.
	{"seq2seq-small", "train", 20, 79.2, 18, 0.053, ptbNote},
	{"seq2seq-medium", "train", 20, 1034.2, 80, 0.46, ptbNote},
	{"seq2seq-large", "train", 20, 5171.2, 343.3, 1.8, ptbNote},
	// Inference with the small config, one sequence: not declared by Salus; weights
	// only (a third of the training declaration's 18 MiB) and one sequence's share of
	// its 79.2 MiB ephemeral peak. An estimate.
	{"seq2seq", "infer", 1, 79.2 / 20, 18.0 / 3, 0.053, ptbNote + " (small config; memory estimated from its training declaration)"},
	// DeepSpeech-like: 2 convolutions, 5 recurrent layers of 800 units, about 3 s of
	// audio per sample: about 5 G multiply-accumulates per utterance.
	{"speech", "train", 25, 1760, 500, 5, speechNote},
	{"speech", "train", 50, 3500, 500, 5, speechNote},
	{"speech", "train", 75, 5240, 500, 5, speechNote},
	{"speech", "infer", 1, 28, 117, 5, speechNote},
	// TensorFlow tutorial MNIST CNN (5x5x32, 5x5x64 convolutions, 1024-unit dense):
	// about 14 M multiply-accumulates per image.
	{"mnist", "train", 25, 62, 38, 0.014, mnistNote},
	{"mnist", "train", 50, 70, 58, 0.014, mnistNote},
	{"mnist", "train", 100, 70, 112, 0.014, mnistNote},
}

const (
	vaeNote      = "MNIST VAE 784-500-500-20 / 20-500-500-784"
	superresNote = "sub-pixel CNN on 75x75 inputs"
	ptbNote      = "PTB word LM, 2 LSTM layers, 10k vocabulary, per sequence"
	speechNote   = "DeepSpeech-like, about 3 s of audio per sample"
	mnistNote    = "TensorFlow tutorial MNIST CNN"
)
