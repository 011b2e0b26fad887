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
		bare    []string
		want    []string
		wantErr bool
	}{
		{"zero value starts every target", nil, nil, []string{TargetBare, TargetFault, TargetLive}, false},
		{"live only", []string{TargetLive}, nil, []string{TargetLive}, false},
		{"duplicates collapse", []string{TargetBare, TargetBare, TargetFault}, nil, []string{TargetBare, TargetFault}, false},
		{"unknown target", []string{TargetLive, "mgmt"}, nil, nil, true},
		{"bare targets alone start no standard target", nil, []string{"shard-0"}, []string{}, false},
		{"bare targets besides live", []string{TargetLive}, []string{"shard-0"}, []string{TargetLive}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Options{Targets: tt.targets, BareTargets: tt.bare}.targetSet()
			if (err != nil) != tt.wantErr {
				t.Fatalf("targetSet() error = %v, wantErr %v", err, tt.wantErr)
			}
			if got := slices.Sorted(maps.Keys(set)); len(got) != len(tt.want) || !slices.Equal(got, tt.want) {
				t.Errorf("targetSet() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOptionsBareTargets(t *testing.T) {
	tests := []struct {
		name    string
		bare    []string
		wantErr bool
	}{
		{"none", nil, false},
		{"names", []string{"shard-0", "shard-1"}, false},
		{"standard name", []string{TargetBare}, true},
		{"mgmt", []string{"mgmt"}, true},
		{"twice", []string{"x", "x"}, true},
		{"not a label", []string{"Shard_0"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := (Options{BareTargets: tt.bare}).bareTargets(); (err != nil) != tt.wantErr {
				t.Errorf("bareTargets() error = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

func TestOptionsControllers(t *testing.T) {
	tests := []struct {
		name      string
		ctrls     []ControllerOptions
		wantNames []string
		wantErr   bool
	}{
		{"zero value runs one unnamed controller", nil, []string{""}, false},
		{"two named", []ControllerOptions{{Name: "convoy-replica-a"}, {Name: "convoy-replica-b"}}, []string{"convoy-replica-a", "convoy-replica-b"}, false},
		{"same name twice", []ControllerOptions{{Name: "a"}, {Name: "a"}}, nil, true},
		{"two unnamed", []ControllerOptions{{}, {}}, nil, true},
		{"name with a slash", []ControllerOptions{{Name: "../x"}}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Options{Controllers: tt.ctrls}.controllers()
			if (err != nil) != tt.wantErr {
				t.Fatalf("controllers() error = %v, wantErr %v", err, tt.wantErr)
			}
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			if !slices.Equal(names, tt.wantNames) {
				t.Errorf("controllers() = %v, want %v", names, tt.wantNames)
			}
		})
	}
}
