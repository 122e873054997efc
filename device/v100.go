package device

// 1.4: Dell EMC HPC Innovation Lab, "Deep Learning on V100" (Rengan Xu et al.,
// Sept 2017; same PowerEdge C4130 server, CUDA 9 / cuDNN 7 on both cards,
// ResNet-50 on ImageNet, NV-Caffe, MXNet and TensorFlow): "in training V100 is
// ~40% faster than P100 with FP32" (>40% for NV-Caffe and MXNet). Dell EMC Ready
// Solutions for AI reference guide (4 SXM2 GPUs in one node): FP32 ResNet-50
// 1.26x with TensorFlow, 1.52x with MXNet. Peak FP32 (SXM2) 15.7/10.6 TFLOPS =
// 1.48x. The TensorFlow-only figure is lower; 1.4 rather than 1.26 is a judgment:
// that figure is from 4-GPU runs, whose synchronization may dilute the card's own
// speed (not checked), and the other two sources agree on ~1.4-1.5.
//
// The 16 GB and 32 GB cards compute alike (the same GV100 and HBM2 bandwidth,
// 900 GB/s); the 32 GB one is the model's default, as it was the one preset
// before the 16 GB one had its own. The PCIe cards (14 TFLOPS FP32) are taken at
// the SXM2 speed; the V100S (a different model, 16.4 TFLOPS, 1134 GB/s) is not
// matched.
func init() {
	forms := []string{"", "pcie", "sxm2", "sxm3", "fhhl"}
	Register(Spec{Key: "v100-16g", Order: 20, Model: "v100", Forms: forms,
		Source: "the same chip as the 32 GB card",
		Device: Device{Name: "V100-16GB", TotalMiB: 16 << 10, CapacityMiB: 14 << 10, PCIeGBps: 12, Speed: 1.4}})
	Register(Spec{Key: "v100", Order: 21, Model: "v100", Forms: forms, Default: true,
		Source: "Dell EMC HPC lab, \"Deep Learning on V100\" (2017): ~40% over P100 in FP32 training",
		Device: Device{Name: "V100-32GB", TotalMiB: 32 << 10, CapacityMiB: 28 << 10, PCIeGBps: 12, Speed: 1.4}})
}
