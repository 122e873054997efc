package core

// SRTFPack is srtf over several lanes: Salus lanes side by side as pack admits
// them, and within each lane the ready job with the least remaining declared GPU
// time first at every iteration boundary.
func SRTFPack() Policy {
	return Policy{
		Name:         "srtf-pack",
		Description:  "Salus lanes, run side by side as pack; shortest remaining declared GPU time first within a lane",
		Mode:         "salus",
		Placement:    SalusLanes{},
		Order:        ByRemaining{},
		UsesDeclared: true,
	}
}

// SRTFPackDefrag is srtf-pack with pack-defrag's lane splits (defrag.go, rule 1).
func init() {
	RegisterPolicyAt(40, SRTFPack)
	RegisterPolicyAt(41, SRTFPackDefrag)
}

func SRTFPackDefrag() Policy { return withSplits(SRTFPack(), "srtf-pack-defrag") }
