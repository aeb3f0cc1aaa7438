// Weak-but-correct gcd (the starting point of the B tasks): same interface and results as
// rtl/gcd.v, but it compares and subtracts in separate cycles, keeps a registered copy of the
// result and a comparator and subtractor in both directions, so it is larger and slower.
module gcd #(
    parameter WIDTH = 16
) (
    input  wire               clk,
    input  wire               reset,
    input  wire               req_val,
    output wire               req_rdy,
    input  wire [2*WIDTH-1:0] req_msg,
    output wire               resp_val,
    input  wire               resp_rdy,
    output wire [WIDTH-1:0]   resp_msg
);
    localparam [2:0] IDLE = 3'd0, COMPARE = 3'd1, SUB_A = 3'd2, SUB_B = 3'd3, DONE = 3'd4;

    reg [2:0]       state;
    reg [WIDTH-1:0] a;
    reg [WIDTH-1:0] b;
    reg [WIDTH-1:0] result;

    assign req_rdy  = (state == IDLE);
    assign resp_val = (state == DONE);
    assign resp_msg = result;

    always @(posedge clk) begin
        if (reset) begin
            state  <= IDLE;
            a      <= {WIDTH{1'b0}};
            b      <= {WIDTH{1'b0}};
            result <= {WIDTH{1'b0}};
        end else begin
            case (state)
                IDLE: if (req_val) begin
                    a     <= req_msg[2*WIDTH-1:WIDTH];
                    b     <= req_msg[WIDTH-1:0];
                    state <= COMPARE;
                end
                COMPARE: begin
                    if (a == {WIDTH{1'b0}}) begin
                        result <= b;
                        state  <= DONE;
                    end else if (b == {WIDTH{1'b0}}) begin
                        result <= a;
                        state  <= DONE;
                    end else if (a >= b) begin
                        state <= SUB_A;
                    end else begin
                        state <= SUB_B;
                    end
                end
                SUB_A: begin
                    a     <= a - b;
                    state <= COMPARE;
                end
                SUB_B: begin
                    b     <= b - a;
                    state <= COMPARE;
                end
                DONE: if (resp_rdy) state <= IDLE;
                default: state <= IDLE;
            endcase
        end
    end
endmodule
