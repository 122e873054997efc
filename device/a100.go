package device

// The A100s: the 40 GB card (1555 GB/s) and the 80 GB one (2039 GB/s SXM4,
// 1935 GB/s PCIe), the same compute (156 TFLOPS TF32 dense). "A100" alone is the
// 80 GB card. The PCIe cards are taken at their SXM4 card's speed: the 80 GB PCIe
// card's 5% less bandwidth is within the estimate's error.
func init() {
	forms := []string{"", "pcie", "sxm4", "sxm"}
	// 2.7: V100 x 1.96. NVIDIA DeepLearningExamples TensorFlow ResNet-50 v1.5
	// README (NGC TF 20.06, XLA, averaged over an epoch), 1 GPU: A100-40GB TF32
	// 808 images/s vs V100-16GB FP32 412 = 1.96x (vs V100-32GB on DGX-2, 432:
	// 1.87x). TensorFlow, as the catalog. Lambda's own pre-release estimate was
	// lower (A100 FP32/TF32 "~1.4x" V100, lambdalabs.com/blog/nvidia-a100-gpu-deep-learning-benchmarks-and-architectural-overview),
	// made before measurements.
	Register(Spec{Key: "a100-40g", Order: 41, Model: "a100", Forms: forms,
		Source: "V100 x 1.96: NVIDIA DeepLearningExamples TF ResNet-50 v1.5, A100-40GB TF32 808 vs V100 FP32 412 images/s",
		Device: Device{Name: "A100-40GB", TotalMiB: 40 << 10, CapacityMiB: 35 << 10, PCIeGBps: 24, Speed: 2.7}})
	// 3.0, estimated from the A100-40GB: the 80 GB card has 1.31x its memory
	// bandwidth (2039 vs 1555 GB/s) and the same compute; +10% is an estimate for
	// bandwidth-bound CNN layers, not a measurement. For the upper side: NVIDIA
	// DeepLearningExamples PyTorch ResNet-50 v1.5 (NGC 21.03), 1 GPU, A100-80GB
	// TF32 938 images/s vs V100-32GB FP32 356 = 2.63x, which would give 1.4 x 2.63
	// = 3.7 (but mixes in a newer software stack).
	Register(Spec{Key: "a100", Order: 42, Model: "a100", Forms: forms, Default: true,
		Source: "A100-40GB x 1.1, estimated for 1.31x the memory bandwidth",
		Device: Device{Name: "A100-80GB", TotalMiB: 80 << 10, CapacityMiB: 70 << 10, PCIeGBps: 24, Speed: 3.0}})
}
