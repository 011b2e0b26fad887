package framework

import (
	"maps"
	"slices"
	"testing"
)

func TestOptionsTargetSet(t *testing.T) {
	tests := []struct {
		name    string
		targets []string
		want    []string
		wantErr bool
	}{
		{"zero value starts every target", nil, []string{TargetBare, TargetFault, TargetLive}, false},
		{"live only", []string{TargetLive}, []string{TargetLive}, false},
		{"duplicates collapse", []string{TargetBare, TargetBare, TargetFault}, []string{TargetBare, TargetFault}, false},
		{"unknown target", []string{TargetLive, "mgmt"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Options{Targets: tt.targets}.targetSet()
			if (err != nil) != tt.wantErr {
				t.Fatalf("targetSet() error = %v, wantErr %v", err, tt.wantErr)
			}
			if got := slices.Sorted(maps.Keys(set)); !slices.Equal(got, tt.want) {
				t.Errorf("targetSet() = %v, want %v", got, tt.want)
			}
		})
	}
}
