package device

// 0.74, estimated by the rule in registry.go, anchored on the A100-40GB (2.7):
// dense TF32 60 / 156 TFLOPS = 0.38, memory bandwidth 300 / 1555 GB/s = 0.19
// (NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s, TF32 120 TFLOPS with sparsity,
// 72 W); geometric mean 0.27, x 2.7 = 0.74. No published TF32 CNN training
// comparison was found; the bandwidth ratio is the low side, and the 72 W limit
// keeps sustained clocks below the peak's.
func init() {
	Register(Spec{Key: "l4", Order: 50, Model: "l4",
		Source: "estimated from the A100-40GB: dense TF32 0.38, bandwidth 0.19",
		Device: Device{Name: "L4", TotalMiB: 24 << 10, CapacityMiB: 21 << 10, PCIeGBps: 24, Speed: 0.74}})
}
