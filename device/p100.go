package device

// The reference: Speed 1 by definition. For scale, TensorFlow's own benchmarks
// (tensorflow.org/performance/benchmarks, DGX-1 P100, TF 1.x, cuDNN 5.1, May 2017,
// synthetic data, batch 64) give 219 images/s for ResNet-50, 142 for Inception v3,
// 154 for VGG16, 91.8 for ResNet-152. Peak FP32 10.6 TFLOPS and 732 GB/s (SXM2;
// the PCIe card: 9.3 TFLOPS), the figures the estimated presets are divided by.
// The 12 GB PCIe card is not this preset (Match refuses it by its memory).
func init() {
	Register(Spec{Key: "p100", Order: 10, Model: "p100", Forms: []string{"", "pcie", "sxm2"},
		Source: "the reference card; TensorFlow benchmarks: ResNet-50 219 images/s",
		Device: Device{Name: "P100", TotalMiB: 16 << 10, CapacityMiB: 14 << 10, PCIeGBps: 12, Speed: 1}})
}
