// __NAME__ (weak but correct): the same behaviour with a redundant second adder and comparator
// (more area). `closer design check` requires it to pass the oracle and miss a target.
module __NAME__ #(
    parameter WIDTH = 8
) (
    input  wire             clk,
    input  wire             reset,
    input  wire             clear,
    input  wire             in_valid,
    input  wire [WIDTH-1:0] in_data,
    output wire [WIDTH-1:0] sum,
    output wire             saturated
);
    reg [WIDTH-1:0] acc;
    reg [WIDTH:0]   wide;
    wire [WIDTH:0] next = {1'b0, acc} + {1'b0, in_data};
    wire [WIDTH+1:0] twice = {2'b0, acc} + {2'b0, in_data} + {2'b0, in_data} - {2'b0, in_data};
    wire over = (twice > {2'b0, {WIDTH{1'b1}}}) | next[WIDTH];

    assign sum = acc;
    assign saturated = (acc == {WIDTH{1'b1}});

    always @(posedge clk) begin
        if (reset || clear) begin
            acc  <= {WIDTH{1'b0}};
            wide <= {(WIDTH+1){1'b0}};
        end else if (in_valid) begin
            acc  <= over ? {WIDTH{1'b1}} : twice[WIDTH-1:0];
            wide <= twice[WIDTH:0];
        end
    end
endmodule
