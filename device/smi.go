package device

import (
	"fmt"
	"strconv"
	"strings"
)

// SMIQuery is the nvidia-smi query whose output ParseSMI reads: each GPU's index,
// name and total memory (MiB), one line each.
var SMIQuery = []string{"--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"}

// SMIGPU is one GPU as nvidia-smi reports it.
type SMIGPU struct {
	Index     int
	Name      string
	MemoryMiB float64
}

// ParseSMI reads the output of nvidia-smi SMIQuery ("0, NVIDIA A100 80GB PCIe,
// 81920" a line). A line that is not index, name, memory is an error naming it.
func ParseSMI(out string) ([]SMIGPU, error) {
	var gpus []SMIGPU
	for n, line := range strings.Split(strings.TrimSpace(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 {
			return nil, fmt.Errorf("nvidia-smi line %d %q: want index, name, memory.total", n+1, line)
		}
		// A name with a comma in it keeps it: the index is the first field, the
		// memory the last.
		idx, err1 := strconv.Atoi(strings.TrimSpace(f[0]))
		mib, err2 := strconv.ParseFloat(strings.TrimSpace(f[len(f)-1]), 64)
		name := strings.TrimSpace(strings.Join(f[1:len(f)-1], ","))
		if err1 != nil || err2 != nil || idx < 0 || !(mib > 0) || name == "" {
			return nil, fmt.Errorf("nvidia-smi line %d %q: want index, name, memory.total in MiB (--format=csv,noheader,nounits)", n+1, line)
		}
		gpus = append(gpus, SMIGPU{Index: idx, Name: name, MemoryMiB: mib})
	}
	if len(gpus) == 0 {
		return nil, fmt.Errorf("nvidia-smi listed no GPU")
	}
	return gpus, nil
}
