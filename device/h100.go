package device

// The H100s: the SXM5 card (nvidia-smi: "NVIDIA H100 80GB HBM3"; "H100" alone)
// and the PCIe card ("NVIDIA H100 PCIe"), both 80 GB. The H100 NVL (94 GB) is not
// matched.
func init() {
	// 3.7, estimated by the rule in registry.go, anchored on the H100 SXM5 below
	// (5.5): dense TF32 378 / 495 TFLOPS = 0.76, memory bandwidth 2.0 / 3.35 TB/s
	// = 0.60 (NVIDIA H100 datasheet: TF32 756 and 989 TFLOPS with sparsity);
	// geometric mean 0.68, x 5.5 = 3.7.
	Register(Spec{Key: "h100-pcie", Order: 60, Model: "h100", Forms: []string{"pcie"},
		Source: "estimated from the H100 SXM (5.5): dense TF32 0.76, bandwidth 0.60",
		Device: Device{Name: "H100-PCIe", TotalMiB: 80 << 10, CapacityMiB: 70 << 10, PCIeGBps: 48, Speed: 3.7}})
	// 5.5: A100-80GB x 1.85. MLPerf Training v3.0 (June 2023), ResNet-50, two
	// Dell submissions of the same shape (4 Intel Platinum CPUs, 16 GPUs): 16x
	// H100-SXM5-80GB 7.8 min vs 16x A100-SXM-80GB 14.4 min = 1.85x (as read by
	// Silverton Consulting, silvertonconsulting.com, July 2023). MLPerf runs mixed
	// precision; no published TF32 CNN ratio was found, so 1.85 stands for TF32
	// too (an estimate: peak TF32 is 3.2x, memory bandwidth 1.64x, and Lambda's
	// H100 analysis, lambdalabs.com/blog/nvidia-h100-gpu-deep-learning-performance-analysis,
	// expects "~2x" for vision models). Taken as the SXM5 card.
	Register(Spec{Key: "h100", Order: 61, Model: "h100", Forms: []string{"", "sxm", "sxm5"},
		Source: "A100-80GB x 1.85: MLPerf Training v3.0 ResNet-50, 16 H100-SXM5 7.8 min vs 16 A100-SXM 14.4 min (mixed precision; taken for TF32 too, estimated)",
		Device: Device{Name: "H100-80GB", TotalMiB: 80 << 10, CapacityMiB: 70 << 10, PCIeGBps: 48, Speed: 5.5}})
}
