package device

// 0.58, estimated by the rule in registry.go, anchored on the P100 (Turing has
// no TF32, so FP32 training runs on its CUDA cores): peak FP32 8.1 / 10.6 TFLOPS
// = 0.76, memory bandwidth 320 / 732 GB/s = 0.44 (NVIDIA T4 datasheet: 16 GB
// GDDR6, 320+ GB/s, 8.1 TFLOPS FP32, 70 W); geometric mean 0.58. The 70 W limit
// keeps sustained clocks below the boost clock the peak figure assumes, so the
// FP32 ratio is the upper side. No published FP32 CNN training comparison with
// the P100 was found. nvidia-smi reports 15360 MiB (ECC on), within the match's
// tolerance of 16 GiB.
func init() {
	Register(Spec{Key: "t4", Order: 30, Model: "t4",
		Source: "estimated from the P100: FP32 peak 8.1/10.6 = 0.76, memory bandwidth 320/732 = 0.44",
		Device: Device{Name: "T4", TotalMiB: 16 << 10, CapacityMiB: 14 << 10, PCIeGBps: 12, Speed: 0.58}})
}
