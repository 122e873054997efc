package device

// 1.06, estimated by the rule in registry.go, anchored on the A100-40GB (2.7):
// dense TF32 62.5 / 156 TFLOPS = 0.40, memory bandwidth 600 / 1555 GB/s = 0.39
// (NVIDIA A10 datasheet: 24 GB GDDR6, 600 GB/s, TF32 125 TFLOPS with sparsity;
// A100 datasheet: 156 TF32, 1555 GB/s for 40 GB); geometric mean 0.39, x 2.7 =
// 1.06. No published TF32 CNN training comparison was found. The A10G of AWS's
// G5 instances is another name (NVIDIA publishes no datasheet for it): not
// matched.
func init() {
	Register(Spec{Key: "a10", Order: 40, Model: "a10",
		Source: "estimated from the A100-40GB (2.7): dense TF32 0.40, bandwidth 0.39",
		Device: Device{Name: "A10", TotalMiB: 24 << 10, CapacityMiB: 21 << 10, PCIeGBps: 24, Speed: 1.06}})
}
