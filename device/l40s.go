package device

// 2.2, estimated by the rule in registry.go, anchored on the A100-40GB (2.7):
// dense TF32 183 / 156 TFLOPS = 1.17, memory bandwidth 864 / 1555 GB/s = 0.56
// (NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, TF32 366 TFLOPS with sparsity);
// geometric mean 0.81, x 2.7 = 2.2. No published TF32 CNN training comparison
// was found. The L40 (a different model, 181 TF32 with sparsity) is not matched.
func init() {
	Register(Spec{Key: "l40s", Order: 51, Model: "l40s",
		Source: "estimated from the A100-40GB: dense TF32 1.17, bandwidth 0.56",
		Device: Device{Name: "L40S", TotalMiB: 48 << 10, CapacityMiB: 42 << 10, PCIeGBps: 24, Speed: 2.2}})
}
