package workload

// Standalone training runs measured by the Salus authors: TensorFlow 1.5 CNN benchmarks
// on synthetic ImageNet data, one NVIDIA P100, each model and batch size run for about
// 1, 5 and 10 minutes. Transcribed from the Salus reference measurements
// (shared/reference/salus-training-profiles.csv of this project's design notes), one
// entry per model and batch size: peak GPU memory in MiB, and for each run its
// completion time in seconds (start-up included) and its number of iterations.
var measuredTraining = []measuredProfile{
	{"vgg11", 25, 3709.6, [3]measuredRun{{"1min", 67.059, 565}, {"5min", 306.910, 2829}, {"10min", 606.446, 5659}}},
	{"vgg11", 50, 5087.5, [3]measuredRun{{"1min", 67.780, 321}, {"5min", 307.061, 1611}, {"10min", 605.928, 3224}}},
	{"vgg11", 100, 9203.4, [3]measuredRun{{"1min", 71.553, 178}, {"5min", 310.629, 894}, {"10min", 609.887, 1790}}},
	{"vgg16", 25, 4316.8, [3]measuredRun{{"1min", 68.348, 311}, {"5min", 308.016, 1561}, {"10min", 607.419, 3124}}},
	{"vgg16", 50, 6183.3, [3]measuredRun{{"1min", 71.471, 168}, {"5min", 310.895, 846}, {"10min", 610.119, 1693}}},
	{"vgg16", 100, 10445.2, [3]measuredRun{{"1min", 76.735, 90}, {"5min", 316.854, 455}, {"10min", 617.567, 912}}},
	{"vgg19", 25, 4463.1, [3]measuredRun{{"1min", 69.055, 266}, {"5min", 309.148, 1338}, {"10min", 608.838, 2677}}},
	{"vgg19", 50, 6359, [3]measuredRun{{"1min", 72.146, 143}, {"5min", 311.806, 721}, {"10min", 612.027, 1444}}},
	{"vgg19", 100, 12024.1, [3]measuredRun{{"1min", 77.547, 76}, {"5min", 317.404, 388}, {"10min", 618.245, 778}}},
	{"resnet50", 25, 2116, [3]measuredRun{{"1min", 79.038, 478}, {"5min", 320.478, 2398}, {"10min", 620.617, 4798}}},
	{"resnet50", 50, 4008.2, [3]measuredRun{{"1min", 80.753, 265}, {"5min", 321.565, 1332}, {"10min", 622.487, 2665}}},
	{"resnet50", 75, 5914.6, [3]measuredRun{{"1min", 82.128, 183}, {"5min", 322.169, 922}, {"10min", 622.484, 1845}}},
	{"resnet101", 25, 3237.5, [3]measuredRun{{"1min", 93.877, 276}, {"5min", 334.707, 1387}, {"10min", 635.135, 2776}}},
	{"resnet101", 50, 6105.8, [3]measuredRun{{"1min", 95.869, 155}, {"5min", 335.966, 782}, {"10min", 635.387, 1565}}},
	{"resnet101", 75, 8988.4, [3]measuredRun{{"1min", 98.357, 108}, {"5min", 337.866, 545}, {"10min", 637.111, 1091}}},
	{"resnet152", 25, 4563, [3]measuredRun{{"1min", 110.803, 191}, {"5min", 348.195, 963}, {"10min", 646.961, 1928}}},
	{"resnet152", 50, 8637.3, [3]measuredRun{{"1min", 111.040, 108}, {"5min", 351.131, 546}, {"10min", 651.234, 1093}}},
	{"resnet152", 75, 12725.7, [3]measuredRun{{"1min", 113.770, 75}, {"5min", 353.584, 381}, {"10min", 653.573, 764}}},
	{"googlenet", 25, 756.1, [3]measuredRun{{"1min", 73.123, 1015}, {"5min", 313.283, 5083}, {"10min", 616.275, 10168}}},
	{"googlenet", 50, 1411.4, [3]measuredRun{{"1min", 74.943, 599}, {"5min", 316.803, 2998}, {"10min", 615.953, 5998}}},
	{"googlenet", 100, 2534.1, [3]measuredRun{{"1min", 76.566, 332}, {"5min", 316.386, 1665}, {"10min", 616.024, 3332}}},
	{"alexnet", 25, 686.6, [3]measuredRun{{"1min", 62.591, 2726}, {"5min", 297.557, 13635}, {"10min", 585.678, 27271}}},
	{"alexnet", 50, 1154.8, [3]measuredRun{{"1min", 65.864, 2067}, {"5min", 310.619, 10343}, {"10min", 611.977, 20688}}},
	{"alexnet", 100, 1396.5, [3]measuredRun{{"1min", 66.886, 1332}, {"5min", 307.533, 6665}, {"10min", 609.085, 13332}}},
	{"overfeat", 25, 3255, [3]measuredRun{{"1min", 65.392, 1199}, {"5min", 306.980, 5998}, {"10min", 609.267, 11999}}},
	{"overfeat", 50, 3416.3, [3]measuredRun{{"1min", 65.997, 951}, {"5min", 306.352, 4760}, {"10min", 614.040, 9522}}},
	{"overfeat", 100, 6240, [3]measuredRun{{"1min", 67.729, 617}, {"5min", 309.239, 3091}, {"10min", 619.076, 6184}}},
	{"inception3", 25, 2499.6, [3]measuredRun{{"1min", 91.269, 303}, {"5min", 331.904, 1521}, {"10min", 633.169, 3044}}},
	{"inception3", 50, 4775.3, [3]measuredRun{{"1min", 95.466, 165}, {"5min", 342.625, 830}, {"10min", 636.736, 1661}}},
	{"inception3", 100, 9379, [3]measuredRun{{"1min", 104.603, 86}, {"5min", 346.814, 436}, {"10min", 642.739, 874}}},
	{"inception4", 25, 4445.1, [3]measuredRun{{"1min", 107.816, 147}, {"5min", 348.353, 741}, {"10min", 649.827, 1484}}},
	{"inception4", 50, 8540.5, [3]measuredRun{{"1min", 116.546, 81}, {"5min", 353.330, 409}, {"10min", 654.928, 820}}},
	{"inception4", 75, 12662, [3]measuredRun{{"1min", 129.093, 55}, {"5min", 360.056, 283}, {"10min", 659.856, 567}}},
}
