package workload_test

import (
	"errors"
	"fmt"

	"github.com/salusgo/salus/workload"
)

// ParseTrace reads a trace in CSV (with a header) or JSON Lines; each job's profile
// comes from the catalog. A job without declared_s declares its iterations' time
// alone (what SRTF orders by).
func ExampleParseTrace() {
	csv := `job_id,model,batch_size,iterations,arrival_s,declared_s
a,resnet50,50,100,0,
b,vgg16,25,200,1.5,60
`
	t, err := workload.ParseTrace([]byte(csv), "two.csv", "two", workload.Default())
	if err != nil {
		panic(err)
	}
	for _, j := range t.Jobs {
		fmt.Printf("%s: %s/%d, %d iterations from t=%gs, declares %.1f s of GPU time\n",
			j.ID, j.Model, j.Batch, j.Iterations, j.ArrivalS, j.Declared())
	}
	// Output:
	// a: resnet50/50, 100 iterations from t=0s, declares 22.6 s of GPU time
	// b: vgg16/25, 200 iterations from t=1.5s, declares 60.0 s of GPU time
}

// A bad value is an error that names the file, the line and the field
// (a *workload.FieldError); nothing is guessed.
func ExampleParseTrace_error() {
	csv := `job_id,model,batch_size,iterations,arrival_s
a,resnet50,50,100,0
b,resnet50,50,many,1
`
	_, err := workload.ParseTrace([]byte(csv), "jobs.csv", "jobs", workload.Default())
	fmt.Println(err)
	var fe *workload.FieldError
	if errors.As(err, &fe) {
		fmt.Println(fe.File, fe.Line, fe.Field)
	}
	// Output:
	// jobs.csv:3: field "iterations": "many" is not a whole number
	// jobs.csv 3 iterations
}
