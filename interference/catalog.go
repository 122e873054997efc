package interference

import (
	"fmt"
	"math"
	"strings"
)

// alias is a measured job family that stands in for a catalog model that was
// not measured in pairs, and why.
type alias struct {
	family string
	why    string
}

// aliases map the catalog's models (package workload) to the measured
// families that stand in for them, first choice first: the first family a
// device model has measured is taken, at its nearest batch size. The measured
// sets hold ResNet-18 (CIFAR-10), ResNet-50 (ImageNet), an LSTM language
// model, a Transformer, an autoencoder recommender, A3C and CycleGAN (Gavel),
// and small CIFAR-10 CNNs, an LSTM and others (Lucid).
var aliases = map[string][]alias{
	"resnet50":       {{"ResNet-50", "the same model"}, {"ResNet18/CIFAR-10", "a residual CNN, the nearest measured"}},
	"resnet101":      {{"ResNet-50", "the same architecture, shallower"}, {"ResNet18/CIFAR-10", "a residual CNN"}},
	"resnet152":      {{"ResNet-50", "the same architecture, shallower"}, {"ResNet18/CIFAR-10", "a residual CNN"}},
	"inception3":     {{"ResNet-50", "an ImageNet CNN of like depth"}, {"ResNet18/CIFAR-10", "a CNN"}},
	"inception4":     {{"ResNet-50", "an ImageNet CNN of like depth"}, {"ResNet18/CIFAR-10", "a CNN"}},
	"googlenet":      {{"ResNet-50", "an ImageNet CNN"}, {"ResNet18/CIFAR-10", "a CNN"}},
	"vgg11":          {{"ResNet-50", "an ImageNet CNN"}, {"VGG/CIFAR-10", "the same architecture"}},
	"vgg16":          {{"ResNet-50", "an ImageNet CNN"}, {"VGG/CIFAR-10", "the same architecture"}},
	"vgg19":          {{"ResNet-50", "an ImageNet CNN"}, {"VGG/CIFAR-10", "the same architecture"}},
	"alexnet":        {{"ResNet-50", "an ImageNet CNN"}, {"VGG/CIFAR-10", "a plain CNN"}},
	"overfeat":       {{"ResNet-50", "an ImageNet CNN"}, {"VGG/CIFAR-10", "a plain CNN"}},
	"mnist":          {{"ResNet-18", "a CNN on small images"}, {"ResNet18/CIFAR-10", "a CNN on small images"}},
	"seq2seq":        {{"LM", "an LSTM model"}, {"LSTM/Wikitext2", "an LSTM model"}},
	"seq2seq-small":  {{"LM", "an LSTM model"}, {"LSTM/Wikitext2", "an LSTM model"}},
	"seq2seq-medium": {{"LM", "an LSTM model"}, {"LSTM/Wikitext2", "an LSTM model"}},
	"seq2seq-large":  {{"LM", "an LSTM model"}, {"LSTM/Wikitext2", "an LSTM model"}},
	"speech":         {{"LM", "a recurrent model"}, {"LSTM/Wikitext2", "a recurrent model"}},
	"superres":       {{"CycleGAN", "an image-to-image CNN"}, {"DCGAN/LSUN", "an image-generating CNN"}},
	"vae":            {{"Recommendation", "an autoencoder"}, {"NeuMF/MovieLens", "a recommender"}},
}

// resolve is the job d answers for j: j itself where measured, else the
// measured job that stands in for it (its alias family at the nearest batch
// size), with where its parameters come from.
func (d *DeviceModel) resolve(j Job) (int, string) {
	if i, ok := d.index[j]; ok {
		return i, fmt.Sprintf("measured in %d pairs on %s (%s)", d.Jobs[i].Pairs, d.Device, d.Mechanism)
	}
	for _, a := range aliases[strings.ToLower(j.Name)] {
		best, bestD := -1, math.Inf(1)
		for i, p := range d.Jobs {
			if p.Name != a.family {
				continue
			}
			// Nearest batch by ratio; a job without a batch size (0) stands as 1.
			dist := math.Abs(math.Log(float64(max(p.Batch, 1)) / float64(max(j.Batch, 1))))
			if dist < bestD {
				best, bestD = i, dist
			}
		}
		if best >= 0 {
			return best, fmt.Sprintf("mapped from %s measured on %s (%s): %s", d.Jobs[best].Job, d.Device, d.Mechanism, a.why)
		}
	}
	for i, p := range d.Jobs { // a measured family at another batch size
		if Family(p.Job) == Family(j) {
			return i, fmt.Sprintf("mapped from %s measured on %s (%s): the same model at another batch size", p.Job, d.Device, d.Mechanism)
		}
	}
	return len(d.Jobs), fmt.Sprintf("estimated: the median job of %s (%s), as no measured model stands in for it", d.Device, d.Mechanism)
}

// SourceOf says where the parameters d gives job j come from.
func (d *DeviceModel) SourceOf(j Job) string {
	_, s := d.resolve(j)
	return s
}

// StandIn is the measured device whose model stands in for a device that has
// none of its own: the V100, the newest data-centre GPU of the measured sets.
const StandIn = "v100"

// ForDevice is the device model for device under mech: its own where it was
// measured (under mech or, failing that, another mechanism: Fallback), else
// StandIn's; and a note that says which was taken where it is not the
// device's own under mech. nil where the model has neither.
func (m *Model) ForDevice(device string, mech Mechanism) (*DeviceModel, string) {
	if d, exact := m.Lookup(device, mech); d != nil {
		if exact {
			return d, ""
		}
		return d, fmt.Sprintf("%s was not measured under %s: its %s pairs stand in", device, mech, d.Mechanism)
	}
	if d, _ := m.Lookup(StandIn, mech); d != nil {
		return d, fmt.Sprintf("%s has no measured pairs: %s's (%s) stand in", device, StandIn, d.Mechanism)
	}
	return nil, ""
}
