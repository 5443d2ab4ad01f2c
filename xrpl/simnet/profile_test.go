package simnet

import (
	"errors"
	"testing"
	"time"
)

func TestProfileValidate(t *testing.T) {
	good := []Profile{
		{},
		{Latency: LogNormal(time.Millisecond, 1), Loss: 1, Missing: 1, Bandwidth: 1},
		{Slowness: []Slowdown{{At: 0, Factor: 2}, {At: 1, Factor: 0.1}}},
		{Outages: []Outage{{At: 0, For: 1}, {At: 1, For: 0}}},
		{RandomOutages: &RandomOutages{MeanUp: 1, MeanDown: 1}},
		{Faults: FaultRates{0.5, 0.5}},
		{Faults: FaultRates{Ignore: 1}, LateBy: time.Second},
	}
	for i, p := range good {
		if err := p.validate(); err != nil {
			t.Errorf("good profile %d: %v", i, err)
		}
	}
	bad := map[string]Profile{
		"latency":           {Latency: Uniform(2, 1)},
		"loss":              {Loss: -0.1},
		"loss NaN":          {Loss: nanValue()},
		"missing":           {Missing: 1.5},
		"bandwidth":         {Bandwidth: -1},
		"factor zero":       {Slowness: []Slowdown{{Factor: 0}}},
		"slowness order":    {Slowness: []Slowdown{{At: 2, Factor: 1}, {At: 2, Factor: 1}}},
		"slowness negative": {Slowness: []Slowdown{{At: -1, Factor: 1}}},
		"outage overlap":    {Outages: []Outage{{At: 0, For: 10}, {At: 5, For: 1}}},
		"outage forever":    {Outages: []Outage{{At: 0}, {At: 5, For: 1}}},
		"outage negative":   {Outages: []Outage{{At: -1, For: 1}}},
		"both outages":      {Outages: []Outage{{At: 1}}, RandomOutages: &RandomOutages{MeanUp: 1, MeanDown: 1}},
		"random means":      {RandomOutages: &RandomOutages{MeanUp: 1}},
		"fault rate":        {Faults: FaultRates{Late: -1}},
		"fault sum":         {Faults: FaultRates{Late: 0.6, Ignore: 0.6}},
		"late by":           {LateBy: -1},
	}
	for name, p := range bad {
		if err := p.validate(); !errors.Is(err, ErrBadProfile) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

func TestProfileValidateExported(t *testing.T) {
	if err := (Profile{Loss: 2}).Validate(); !errors.Is(err, ErrBadProfile) {
		t.Fatalf("Validate of a loss of 2: %v", err)
	}
	if err := (Profile{Latency: Uniform(1, 2), Faults: FaultRates{Corrupt: 0.5}}).Validate(); err != nil {
		t.Fatalf("Validate of a good profile: %v", err)
	}
}
